"""Stage 1 of a survey without `--papers`: the vault papers about a topic, each with the reason it was chosen.

1. **Relevance per paper** from the hybrid index: the topic's vector against every paper's title/abstract
   vector (in memory, one product over the papers table), the nearest chunks (sections, paragraphs, notes,
   annotations) and the full-text (BM25) hits of the chunks, grouped by paper; and the topic's own words in
   the paper's title (a word or its variant, weighted by its rarity among the vault's titles): a title is the
   authors' statement of what the paper is about, and it separates "Gaussian splatting" papers from general
   3D reconstruction where the embedding does not.
2. **Pseudo-relevance feedback**: the best-matching papers lend the topic their vocabulary: the query vector
   moves towards their vectors (Rocchio) and the full-text query gains the words they share that are rare in the
   vault; relevance is computed again with the expanded topic.
3. **Cut-off from the score distribution**: a paper is selected when its score stands out from the vault's
   (robust z-score over every candidate: median and MAD) and is close enough to the best papers' scores; there is
   no fixed count; a record known by its title alone must stand closer to the best (`title_only_fraction`),
   as its score rests on a dozen words. `max_papers` caps the selection. A paper chosen by its score must also name one of the topic's
   own words (any spelling) in its title, abstract or matched passages: in a vault far from the topic's field,
   every paper of the field stands out by score, whatever its subject; those that name none are near misses.
   Every listed paper says what its score rests on (title only, title and abstract, full text). A rule that a
   title alone does not choose a paper was tried and dropped: chosen on the tune topics, it lowered the held-out
   topics from 0.916 / 0.637 to 0.750 / 0.609 (docs/survey.md).
4. **Citation links**: a paper near the cut-off that a core paper (the selected papers the topic is surest of)
   cites, or that cites one
   (reference lists matched by DOI, arXiv id or title, as `correlate.find_lineages` does), is selected too,
   with the link as its reason. A near miss that names none of the topic's words (step 3) is linked only when
   a core paper cites it ("Bigtable: A Distributed Storage System ..." for "data stores": the words differ,
   the core's reference list says it belongs).
   Further down (to `wide_fraction` of the cut-off's margin), a paper a core paper cites is linked in when its
   title or abstract names one of the topic's rarer words (rarity among the vault's titles): "Generalized
   Isolation Level Definitions", which Elle cites, for "checking transactional isolation anomalies".
5. **Citation evidence**: a field's canonical papers are often named by a method, a system or a metaphor
   ("Paxos", "The Part-Time Parliament"), not by the topic, and score low on their own; everyone on the topic
   cites them. A vault paper that several of the selected papers cite (`cite_several`), or at least two and half
   of those with a reference list (`cite_share`) among the core or among all selected, is selected whatever its
   own score, with "cited by 2 of the 3
   selected papers" as its reason, provided the selected papers cite it `cite_lift` times as often as the rest
   of the vault does: a textbook or a statistics method cited everywhere does not enter every survey. Papers
   cited by one selected paper, and those cited by the papers that citation evidence brought in (one step
   further), are near misses with that evidence.
6. **The topic's own survey** (run before step 5): a core paper whose reference list names at least `vouch_refs`
   vault papers and `vouch_cover` of the other selected papers vouches for the vault papers it cites that no
   paper outside the selection cites and that stand `vouch_z` robust deviations above the vault's median:
   "Smashing the Stack for Fun and Profit", which only "SoK: Eternal War in Memory" cites. A core paper of the
   field around the topic (Megastore for "consensus") cites about half of the selection and vouches for nothing.
   It vouches only for the references it cites in a sentence near the topic (`vouch_quantile`, step 7).
7. **Citation contexts** (papervault.survey.contexts): the sentences of the vault's papers that cite a paper. A
   record known by its title only takes its citing sentence nearest the topic as one more passage (step 1); a
   core paper links in a paper it cites in a sentence as near the topic as those citing the selected papers
   (`said_*`), down to `said_floor` of the cut-off's margin: "Smashing the Stack for Fun and Profit", cited by
   the SoK for "the stack smashing attack".

8. **Cited alongside** (papervault.survey.contexts): a vault paper cited in one sentence of any vault paper with
   at least `cocite_min` papers chosen by their own score is chosen too, its score down to `cocite_floor` of
   the cut-off's margin: an enumerating sentence ("Return-Oriented Programming (ROP) [6], [7], [8] ...") names a
   field's papers whose titles do not ("The Geometry of Innocent Flesh on the Bone").

The title lift is held in proportion: it adds at most `title_share` of the paper's own margin (passages, full
text, abstract) over the vault's median, so a title that repeats the topic cannot outrank a paper whose abstract
and body are about it.

The parameters (`TopicParams`, papervault.survey.topic.params) are one dataclass, each with what it is and how it
was chosen. The candidates table (table.py) holds every paper of the vault, read once through the index's public
API; the scores are functions over it (scoring.py); the citation rules (links.py) and citation evidence
(evidence.py) read the vault's citations (citing.py); `TopicSelector` (selector.py) runs the steps in order.

Everything read here is the index and the reference lists of the vault's papers with full text (the citation
graph, papervault.survey.citations, built once per selector). docs/survey.md records the measurements, with each
signal's contribution (bench/survey_selection.py).
"""

from papervault.survey.topic.params import ABSTRACT, DEFAULT, FULL_TEXT, SIGNALS, TITLE_ONLY, TopicParams
from papervault.survey.topic.selector import TopicSelector, select_topic
from papervault.survey.topic.table import Candidate, TopicSelection
from papervault.survey.topic.text import best_sentences, same_word

_same_word = same_word   # its former name

__all__ = ["ABSTRACT", "DEFAULT", "FULL_TEXT", "SIGNALS", "TITLE_ONLY", "Candidate", "TopicParams", "TopicSelection",
           "TopicSelector", "best_sentences", "same_word", "select_topic"]
