"""The lexical side: tokens, question framing, BM25 ranking. Pure and fast."""

from __future__ import annotations

from memfiles.index.lexical import LexicalIndex, document_tokens
from memfiles.index.text import strip_framing, tokenize


class TestTokens:
    def test_compounds_count_whole_and_in_parts(self) -> None:
        """A flag keeps its whole form beside its stemmed parts; stop words go."""
        tokens = tokenize("Use --max-fanout for the drivers")
        assert "max-fanout" in tokens and "max" in tokens and "fanout" in tokens
        assert "the" not in tokens and "driver" in tokens

    def test_framing_is_dropped_but_not_everything(self) -> None:
        """A question loses its framing words; a query of framing words only is kept as is."""
        assert strip_framing("What did we learn about coverage aggregation?") == "coverage aggregation"
        assert strip_framing("what is it") == "what is it"


class TestBM25:
    def test_rare_term_ranks_its_document_first(self) -> None:
        """The document holding a rare term wins; the title counts more than the body."""
        docs = [
            document_tokens("Signing happens on the build host", "Keys stay there."),
            document_tokens("Nightly restore", "Staging gets a copy of production."),
            document_tokens("Build cache", "The build host keeps a cache; signing is elsewhere."),
        ]
        index = LexicalIndex.build(docs)
        scores = index.scores("signing")
        assert scores.argmax() == 0 and scores[1] == 0
        assert index.scores("production staging").argmax() == 1

    def test_save_and_load_give_the_same_scores(self, tmp_path) -> None:
        """A saved index scores exactly like the one built."""
        index = LexicalIndex.build([document_tokens("a title", "a body of text"), document_tokens("other", "words")])
        index.save(tmp_path)
        loaded = LexicalIndex.load(tmp_path)
        assert (loaded.scores("body title").tolist()) == index.scores("body title").tolist()
