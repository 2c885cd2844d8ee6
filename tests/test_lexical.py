"""The lexical side: tokens, question framing, BM25 ranking. Pure and fast."""

from __future__ import annotations

from memfiles.index.lexical import RECIPE, LexicalIndex, document_tokens, saved_is_current
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

    def test_an_index_saved_by_another_recipe_is_not_loaded(self, tmp_path) -> None:
        """An index saved with other BM25 parameters (an older memfiles) is refused, so the searcher
        rebuilds it from the catalog instead of ranking with stale weights."""
        import json

        import pytest

        index = LexicalIndex.build([document_tokens("a title", "a body of text"), document_tokens("other", "words")])
        index.save(tmp_path)
        vocab = tmp_path / "bm25-vocab.json"
        data = json.loads(vocab.read_text())
        assert data["recipe"] == RECIPE
        for stale in ({**data, "recipe": "k1=1.2 b=0.75 title=2"}, {k: v for k, v in data.items() if k != "recipe"}):
            vocab.write_text(json.dumps(stale))
            with pytest.raises(ValueError, match="not built by this recipe"):
                LexicalIndex.load(tmp_path)
            assert not saved_is_current(tmp_path, data["token"])
        for garbage in ("[]", '"text"', "{"):  # a file of other JSON, or none: refused as ValueError too
            vocab.write_text(garbage)
            with pytest.raises(ValueError):
                LexicalIndex.load(tmp_path)
            assert not saved_is_current(tmp_path, data["token"])
        vocab.write_text(json.dumps(data))
        assert saved_is_current(tmp_path, data["token"]) and not saved_is_current(tmp_path, "another save")


class TestNeighbours:
    """Score regularisation (index/score.py): a candidate's rank moves towards its nearest candidates'."""

    @staticmethod
    def unit(*rows: list[float]):
        import numpy as np

        matrix = np.asarray(rows, dtype=np.float32)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    def test_good_neighbours_lift_a_candidate_and_an_isolated_one_keeps_its_rank(self) -> None:
        import numpy as np

        from memfiles.index.score import nearest, neighbourly

        # A's nearest is B (ranked well), C's nearest is D (ranked badly); E is orthogonal to all
        vectors = self.unit([1, 0, 0, 0], [0.9, 0.1, 0, 0], [0, 0, 1, 0], [0, 0.1, 0.9, 0], [0, 0, 0, 1])
        ranks = np.asarray([0.8, 0.9, 0.85, 0.1, 0.5])
        near = nearest(vectors, 1)
        assert near[0][:, 0].tolist()[:4] == [1, 0, 3, 2]
        moved = neighbourly(ranks, near, 0.5, pool=0)
        assert ranks[2] > ranks[0] and moved[0] > moved[2]  # A overtakes C
        assert np.isclose(moved[0], 0.5 * 0.8 + 0.5 * 0.9) and np.isclose(moved[2], 0.5 * 0.85 + 0.5 * 0.1)
        assert moved[4] == ranks[4]  # no neighbour with a positive cosine: E keeps its own rank

    def test_shares_follow_cosine_and_ignore_dissimilar_rows(self) -> None:

        from memfiles.index.score import nearest

        vectors = self.unit([1, 0], [1, 1], [-1, 0.01])
        rows, shares = nearest(vectors, 2)
        for row, (neighbour, share) in enumerate(zip(rows.tolist(), shares.tolist(), strict=True)):
            for n, s in zip(neighbour, share, strict=True):
                cosine = float(vectors[row] @ vectors[n])
                assert (s == 0) == (cosine <= 0)

    def test_too_few_candidates_or_no_weight_leave_the_ranks(self) -> None:
        import numpy as np

        from memfiles.index.score import nearest, neighbourly

        one = np.asarray([0.7])
        assert neighbourly(one, nearest(self.unit([1, 0]), 10), 0.5, pool=0).tolist() == [0.7]
        ranks = np.asarray([0.2, 0.9])
        near = nearest(self.unit([1, 0], [1, 0.1]), 10)  # asks for 10, has 1
        assert near[0].shape == (2, 1)
        assert neighbourly(ranks, near, 0.0, pool=0).tolist() == [0.2, 0.9]
        assert np.allclose(neighbourly(ranks, near, 0.5, pool=0), [0.55, 0.55])
        assert neighbourly(ranks, near, 0.5, pool=3).tolist() == [0.2, 0.9]  # a pool smaller than `pool`
