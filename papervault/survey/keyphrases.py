"""Key phrases that name a group of papers: noun-phrase n-grams of their titles and abstracts, contrasted with
the rest of the selection.

Candidates are the runs of words between stop words, verbs and punctuation (the RAKE split, Rose et al. 2010),
and their one- to four-word sub-runs that end in a noun-like word. A candidate's score for a group is its
frequency in the group's titles (counted three times) and abstracts, times the share of the group's papers that
use it, times its inverse document frequency over the whole selection (c-TF-IDF); longer phrases get a bonus
because "state machine replication" says more than "replication". The phrase is shown in the form the papers
write it (the commonest surface form in running text; a title's capitalisation is undone unless the word is a
name written capitalised in the prose too). Nothing is stemmed: every phrase shown occurs in a title or abstract.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from papervault.parse.text import dehyphen

WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'’][A-Za-z0-9]+)*")
# Words that split candidates: function words, reporting verbs and vague adjectives.
BREAK = frozenset("""
a about above across after again against all almost also although always am among an and another any are as at
be because been before being below between both but by can cannot could did do does doing done down during each
either else enough even ever every few for from further had has have having he her here hers him his how however
i if in into is it its itself just less many may me might more most much must my near neither never no nor not
now of off often on once one only onto or other others otherwise our ours out over own per rather same several
she should since so some such than that the their theirs them then there therefore these they this those though
through thus to too toward towards two three under unless until up upon us very via was we were what when where
whether which while who whom whose why will with within without would yet you your et al e g i ie eg vs etc
paper papers article work works approach approaches present presents presented propose proposes proposed show shows
shown describe describes described introduce introduces introduced provide provides provided use uses used using
make makes made allow allows allowed enable enables enabled achieve achieves achieved demonstrate demonstrates
consider considers considered give gives given take takes taken based called known new novel different various
several important simple general large small many first second third key main existing recent previous prior
able possible likely well better best good high low higher lower often typically usually significantly
""".split())
# Heads that do not make a phrase a name for a theme.
WEAK_HEAD = frozenset("""
result results problem problems case cases way ways part parts number numbers set sets kind kinds type types
order terms term time times system systems method methods technique techniques model models study studies use
fact form forms level levels amount lot range example examples aspect aspects issue issues design designs paper
""".split())
ADJ_END = re.compile(r"(?:ly|able|ible|ive|ous|ful|ic|ical|al|less)$")
TITLE_WEIGHT = 3


@dataclass
class Phrase:
    key: str                          # lowercased words joined by spaces
    surface: Counter = field(default_factory=Counter)    # forms in running text (not sentence-initial)
    title_forms: Counter = field(default_factory=Counter)


def _runs(text: str) -> list[list[tuple[str, bool]]]:
    """Runs of candidate words (word, sentence-initial) between breaks."""
    runs: list[list[tuple[str, bool]]] = []
    for sent in re.split(r"(?<=[.!?;:])\s+|[()\[\],\"“”]", text):
        cur: list[tuple[str, bool]] = []
        first = True
        pos = 0
        for m in WORD.finditer(sent):
            gap = sent[pos:m.start()]
            pos = m.end()
            w = m.group(0)
            if re.search(r"[^\s]", gap) and not re.fullmatch(r"\s*[-/]\s*", gap):
                if cur:
                    runs.append(cur)
                cur = []
            if w.lower() in BREAK or w.isdigit() or len(w) < 2 or (w.lower().endswith("ed") and len(w) > 4 and not w[0].isupper()):
                if cur:
                    runs.append(cur)
                cur = []
            else:
                cur.append((w, first))
            first = False
        if cur:
            runs.append(cur)
    return runs


def _noun_like(word: str) -> bool:
    low = word.lower()
    if low in WEAK_HEAD:
        return False
    name = word.isupper() or any(c.isupper() for c in word[1:])     # an acronym or a CamelCase name
    return name or not ADJ_END.search(low)


def candidates(text: str, *, max_words: int = 4) -> list[tuple[str, str, bool]]:
    """(key, surface form, sentence-initial) for every noun-phrase n-gram of `text`."""
    out = []
    for run in _runs(text):
        words = [w for w, _ in run]
        for i in range(len(words)):
            for n in range(1, max_words + 1):
                if i + n > len(words):
                    break
                gram = words[i:i + n]
                if not _noun_like(gram[-1]) or len(gram[-1]) < 3:
                    continue
                if n == 1 and (len(gram[0]) < 4 or gram[0].islower() and ADJ_END.search(gram[0])):
                    continue
                if gram[0].lower().endswith("ly") or (n > 1 and gram[0].lower().endswith("ing")):
                    continue        # "highly available storage", "providing scalable storage": not a name
                out.append((" ".join(g.lower() for g in gram), " ".join(gram), run[i][1]))
    return out


class Vocabulary:
    """The candidates of each paper's title and abstract, with their surface forms."""

    def __init__(self, docs: dict[str, tuple[str, str]]):
        self.tf: dict[str, Counter] = {}
        self.in_title: set[str] = set()
        self.phrases: dict[str, Phrase] = {}
        self.df: Counter = Counter()
        caps: dict[str, Counter] = defaultdict(Counter)     # word -> forms seen in running text
        for pid, (title, abstract) in docs.items():
            tf: Counter = Counter()
            for key, form, _ in candidates(title):
                tf[key] += TITLE_WEIGHT
                self.in_title.add(key)
                self.phrases.setdefault(key, Phrase(key)).title_forms[form] += 1
            abstract = dehyphen(abstract)
            for key, form, initial in candidates(abstract):
                tf[key] += 1
                ph = self.phrases.setdefault(key, Phrase(key))
                if not initial:
                    ph.surface[form] += 1
            for w in WORD.findall(abstract):
                caps[w.lower()][w] += 1
            self.tf[pid] = tf
            self.df.update(set(tf))
        self.caps = caps

    def shown(self, key: str) -> str:
        """The phrase as the papers write it."""
        ph = self.phrases[key]
        if ph.surface:
            return ph.surface.most_common(1)[0][0]
        form = ph.title_forms.most_common(1)[0][0] if ph.title_forms else key
        out = []
        for w in form.split():
            seen = self.caps.get(w.lower())
            if w.isupper() or any(c.isupper() for c in w[1:]):
                out.append(w)                   # an acronym or a CamelCase name: as written
            elif seen and seen.most_common(1)[0][0][0].isupper() and seen.get(w.lower(), 0) == 0:
                out.append(w)                   # a name the prose writes capitalised too
            else:
                out.append(w.lower())
        return " ".join(out)

    def rank(self, members: list[str], all_ids: list[str], *, limit: int = 3) -> list[str]:
        """The keys that best name the group `members` against the other papers of `all_ids`."""
        n = len(all_ids)
        tf: Counter = Counter()
        inside: Counter = Counter()
        for pid in members:
            tf.update(self.tf.get(pid, {}))
            inside.update(set(self.tf.get(pid, {})))
        # C-value: a phrase nested in longer candidates of the group counts only its own occurrences
        longer: dict[str, list[int]] = defaultdict(list)
        for key, f in tf.items():
            words = key.split()
            for i in range(len(words)):
                for j in range(i + 1, len(words) + 1):
                    sub = " ".join(words[i:j])
                    if sub != key and sub in tf:
                        longer[sub].append(f)
        score = {}
        for key, f in tf.items():
            words = key.split()
            if f < 2:
                continue        # said once in one abstract: not what the group is about
            if " " not in key and key not in self.in_title and (inside[key] < 2 or key.endswith("ing") or len(key) < 5):
                continue        # a lone word names a theme only from a title or when several papers use it
            own = f - (sum(longer[key]) / len(longer[key]) if longer[key] else 0.0)
            if own <= 0:
                continue
            share = inside[key] / len(members)
            idf = math.log(1 + n / self.df[key])
            if len(members) > 1 and inside[key] < 2:
                share *= 0.5    # one member's phrase names a group less well than a shared one
            score[key] = own * share * idf * (1 + 0.8 * (min(len(words), 4) - 1))
        chosen: list[str] = []
        for key, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0])):
            if any(key in c or c in key for c in chosen):
                continue
            chosen.append(key)
            if len(chosen) >= limit:
                break
        return chosen


def label(phrases: list[str]) -> str:
    """A theme title from its key phrases: "State machine replication and failure detectors"."""
    if not phrases:
        return ""
    text = " and ".join(phrases[:2])
    return text[0].upper() + text[1:]
