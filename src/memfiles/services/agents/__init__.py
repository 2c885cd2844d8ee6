"""What agents get and leave: recall (prior experience for a situation), the hooks that push it before
they act, the working memory of a run, the promotion of episodes, and the persona."""
