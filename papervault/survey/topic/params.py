"""The parameters of topic selection (papervault.survey.topic), in one place, each with what it is and how it was
chosen, and the names of its signals and of what a paper's score rests on."""

from __future__ import annotations

from dataclasses import dataclass

# What a paper's score rests on: its title only (a record with no abstract and no full text, e.g. one taken from a
# reference list), its title and abstract, or its full text.
TITLE_ONLY, ABSTRACT, FULL_TEXT = "title only", "title and abstract", "full text"

SIGNALS = ("passages", "fulltext", "title", "feedback", "links", "citations", "specific", "wide", "survey",
           "contexts", "said", "alongside")   # `without` switches off


@dataclass(frozen=True)
class TopicParams:
    """How topic selection scores and cuts. The cut-off's and the feedback's values were set on the benchmark's
    topics (bench/survey_selection.py, docs/survey.md) and hold on vaults of 200 and 20,000 papers; the other
    groups say when they were decided."""

    # --- relevance and feedback (set on the benchmark's topics) ---
    candidates: int = 400          # chunks taken from each of the vector and full-text rankings (each pass)
    paper_pool: int = 400          # papers taken from the title/abstract vector ranking
    feedback_docs: int = 8         # papers whose vectors and words expand the topic
    feedback_fraction: float = 0.8  # ... each within this fraction of the best paper's margin over the vault's median
    rocchio: float = 0.7           # weight of the feedback papers' mean vector against the topic's own
    expansion_terms: int = 6       # words added to the full-text query
    lexical_weight: float = 0.12   # weight of the full-text score (normalised to about 0..1) against the cosine
    chunk_weight: float = 0.5      # how much a paper's best passage may lift its title/abstract similarity
    title_weight: float = 0.12     # lift of a paper whose title names the topic's own words (times their
                                   # rarity-weighted share)
    title_share: float = 0.5       # ... at most this share of the paper's own margin over the vault's median
    # --- the cut-off (set on the benchmark's topics) ---
    z_min: float = 2.5             # a selected paper stands at least this many robust deviations above the median
    top_fraction: float = 0.6      # ... and its margin over the median is at least this fraction of the best
                                   # papers' margin
    title_only_fraction: float = 0.7  # ... this fraction for a record known by its title alone (TITLE_ONLY)
    background_cap: float = 0.25   # the highest median taken as the vault's background similarity
    small_vault: int = 30          # below this many papers the vault's spread says nothing: only top_fraction cuts
    near_fraction: float = 0.9     # papers within this fraction of the cut-off are near misses (shown, linkable)
    near_shown: int = 15           # near misses listed in selection.md
    cited_shown: int = 40          # ... and near misses by citation evidence (cited by a selected paper, not chosen)
    passages: int = 2              # passages given as a selected paper's reason
    link_reads: int = 60           # at most this many near misses are looked at for citation links
    wide_fraction: float = 0.5     # a paper a core paper cites, naming one of the topic's rarer words, may stand
                                   # this far down (fraction of the cut-off's margin over the median) and still be
                                   # linked in
    # --- citation evidence: set before the held-out topics were added (bench/survey_selection_gold.yaml) and not
    # changed after measuring them ---
    cite_min: int = 2              # a paper enters by citations when at least this many selected papers cite it ...
    cite_several: int = 3          # ... and either this many do,
    cite_share: float = 0.5        # ... or this share of the selected papers with a reference list do;
    cite_lift: float = 3.0         # and the selected papers cite it this many times as often as the rest of the vault
    # --- the topic's own survey (stage 6): decided on the tune topics only (bench/survey_selection_gold.yaml) ---
    vouch_refs: int = 10           # a core paper vouches for its references when it cites at least this many vault
                                   # papers ...
    vouch_cover: float = 0.9       # ... and at least this share of the other selected papers (it is the topic's
                                   # survey)
    vouch_z: float = 0.5           # a paper it vouches for stands this many robust deviations above the median
    # --- what a paper's score rests on: a record's paper row is its title, its authors, then its abstract ---
    abstract_words: int = 12       # this many words after the title and author lines make an abstract
    # --- citation contexts (papervault.survey.contexts): decided on the tune topics only
    # (bench/survey_selection_gold.yaml, docs/survey.md) ---
    context_bases: tuple[str, ...] = (TITLE_ONLY,)   # a citing sentence is one more passage of a paper whose score
                                                     # rests on this
    vouch_quantile: float = 0.2    # the topic's survey vouches for a reference it cites in a sentence at least as
                                   # near the topic as this quantile of its citing sentences (its surroundings are
                                   # cited further off)
    said_min: int = 3              # a core paper that cites at least this many selected papers in sentences of its
                                   # text ...
    said_quantile: float = 0.25    # ... links in a paper it cites in a sentence as near the topic as this quantile
                                   # of those,
    said_floor: float = 0.5        # ... down to this fraction of the cut-off's margin over the median
    # --- a paper cited in one sentence with papers chosen by their own score (stage 8): decided on the tune topics
    # only, after the four tune topics of that shape were added (bench/survey_selection_gold.yaml, docs/survey.md) ---
    cocite_min: int = 2            # ... at least this many of them in the sentence
    cocite_floor: float = 0.5      # ... its own score down to this fraction of the cut-off's margin over the median


DEFAULT = TopicParams()
