"""The words of topic selection: a text's content words, two spellings of one word, a passage's sentences nearest
the topic, and what a paper row says beyond its title."""

from __future__ import annotations

import re

from papervault.survey.topic.params import ABSTRACT, TITLE_ONLY

_WORD = re.compile(r"[a-z][a-z0-9\-]{2,}")
_STOP = set("""
a about above across after again against all almost also although always among an and another any are around as at
based be because been before being below between both but by can could data did do does doing done due during each
either et al etc even ever every few for from further given had has have having here how however if in into is it its
itself just large less like made make many may more most much must new no nor not novel now of often on once one only
or other our out over paper per present propose proposed provide results same several should show shows since so
some such than that the their them then there these they this those through thus to too two under up upon us use
used using very via was we well were what when where whether which while who whom why will with within without would
yet approach method methods problem problems work works study task tasks model models existing state art first
second three different various able achieve achieves better improve improved high low performance experiments
experimental demonstrate significantly effective efficient framework set both however recent recently learning
""".split())
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])")


def words(text: str) -> list[str]:
    """The content words of `text`, lower-cased (stop words and words under three letters left out)."""
    return [w.strip("-") for w in _WORD.findall(text.lower()) if w.strip("-") not in _STOP]


def same_word(a: str, b: str) -> bool:
    """Two spellings of one word: equal, or sharing all but a short ending ("privacy"/"private",
    "federated"/"federation", "splatting"/"splats"); words under five letters only take a plural "s"."""
    if a == b:
        return True
    if min(len(a), len(b)) < 5:
        return a + "s" == b or b + "s" == a
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k >= max(5, min(len(a), len(b)) - 3)


def best_sentences(text: str, wanted: set[str], limit: int = 2) -> str:
    """The sentence(s) of a passage that share the most words with the (expanded) topic, in their order."""
    sents = [x.strip() for x in _SENTENCE.split(re.sub(r"\s+", " ", text or "")) if x.strip()]
    if len(sents) <= limit:
        return " ".join(sents)
    scored = sorted(range(len(sents)), key=lambda k: -len(wanted & set(words(sents[k]))))[:limit]
    return " … ".join(sents[k] for k in sorted(scored))


def basis_of(text: str, title: str, authors: list[str], abstract_words: int) -> str:
    """What the paper row of a paper without full text says beyond its title: ABSTRACT when the lines after the
    title and the author line hold at least `abstract_words` words, else TITLE_ONLY."""
    lines = text.split("\n")
    if lines and lines[0].strip() == title.strip():
        lines = lines[1:]
    if lines and authors and lines[0].strip() == ", ".join(authors[:8]).strip():
        lines = lines[1:]
    return ABSTRACT if len(" ".join(lines).split()) >= abstract_words else TITLE_ONLY
