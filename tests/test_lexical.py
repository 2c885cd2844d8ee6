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

    def test_framing_never_eats_part_of_a_compound(self) -> None:
        """Framing words inside hyphenated compounds stay: `on-call rota` and `how-to` keep every character."""
        assert strip_framing("on-call rota") == "on-call rota"
        assert strip_framing("how-to") == "how-to"
        assert strip_framing("what is our on-call rota?") == "on-call rota"
        assert strip_framing("how-to for the release") == "how-to for the release"

    def test_framing_never_touches_code_like_tokens(self) -> None:
        """Dotted, underscored, flagged, quoted or called tokens are kept whole even when they spell a framing word."""
        assert strip_framing("what.py crashes") == "what.py crashes"
        assert strip_framing("where_clause timeout") == "where_clause timeout"
        assert strip_framing("--show flag") == "--show flag"
        assert strip_framing('"which" keyword') == '"which" keyword'
        assert strip_framing("find() is slow") == "find() slow"
        assert strip_framing("How do I use `find` here") == "use `find` here"

    def test_framing_is_generic_english_not_collection_words(self) -> None:
        """Content words a library request uses (articles, papers, information) are not framing."""
        assert strip_framing("articles about information retrieval") == "articles information retrieval"


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
