"""Text features of a PR: cleaned title and body, tokens, and the issues it claims to fix.

Checklists, HTML comments and code blocks say nothing about the goal of one PR, so they are
dropped before tokenising; a repository's own PR template is learned from its open PRs
(bot.duplicates.template), not written down here. Tokens are
lower-cased, identifiers are split into their words as well as kept whole, and words are
stemmed so "crashes" meets "crash".
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_FENCED_CODE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.S | re.M)
_DETAILS = re.compile(r"<details>.*?</details>", re.S | re.I)
_CHECKLIST = re.compile(r"^\s*[-*] \[[ xX]\].*$", re.M)
_URL = re.compile(r"https?://\S+")
# Markup and sign-offs: the same in every PR of a project (review-tool badges are an <img> in a
# link; DCO lines name the author, not the change).
_IMAGE = re.compile(r"!\[[^\]\n]{0,200}\]\([^)\n]{0,500}\)")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>\n]{0,500}>")
_SIGN_OFF = re.compile(
    r"^\s*(?:signed-off-by|reviewed-by|co-authored-by|acked-by|docker-dco-[\w.-]+)\b.*$",
    re.I | re.M,
)
_TITLE_TAG = re.compile(r"^\s*(\[[^\]]{1,30}\]\s*)+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*[A-Za-z0-9]|[A-Za-z]")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# "Fixes #12", "closes owner/repo#12", "Resolves https://github.com/o/r/issues/12".
_CLAIM = re.compile(
    r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\b\s*:?\s*"
    r"(?:(?:[\w.-]+/[\w.-]+)?#|https?://[^\s/]+/[\w.-]+/[\w.-]+/(?:issues|pull)/)(\d+)",
    re.I,
)
_MENTION = re.compile(r"(?:[\w.-]+/[\w.-]+#|(?<![\w&])#|/(?:issues|pull)/)(\d+)\b")

# Words so common in PR text that they only add noise, beyond the usual English stop words.
_STOP = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during each
    few for from further had has have having he her here hers him his how i if in into is it
    its itself just me more most my no nor not now of off on once only or other our ours out
    over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which while
    who whom why will with would you your yours pr pull request issue please thanks thank
    cc todo wip should n t s via use using used add adds added support""".split()
)

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def clean_title(title: str) -> str:
    """The title without its ``[Bugfix][Kernel]`` category tags."""
    return _TITLE_TAG.sub("", title or "").strip()


def clean_body(body: str) -> str:
    """The body without template boilerplate, comments, code blocks and URLs."""
    text = body or ""
    text = _HTML_COMMENT.sub(" ", text)
    text = _DETAILS.sub(" ", text)
    text = _FENCED_CODE.sub(" ", text)
    text = _CHECKLIST.sub(" ", text)
    text = _IMAGE.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    text = _SIGN_OFF.sub(" ", text)
    text = _URL.sub(" ", text)
    return "\n".join(line for line in text.splitlines() if not _is_shouting(line))


_SHOUTED_WORDS = re.compile(r"\b[A-Z]{3,}(?:[^A-Za-z0-9\n]+[A-Z]{3,}){3,}\b")


def _is_shouting(line: str) -> bool:
    # Template instructions ("PLEASE FILL IN THE PR DESCRIPTION HERE ...", "BEFORE SUBMITTING,
    # PLEASE READ ...") are written in capitals; they are the same in every PR and say nothing
    # about this one. Four capitalised words in a row are rare in real prose.
    letters = [c for c in line if c.isalpha()]
    if len(letters) >= 20 and sum(c.isupper() for c in letters) >= 0.8 * len(letters):
        return True
    return _SHOUTED_WORDS.search(line) is not None


def tokens(text: str) -> list[str]:
    """Stemmed content words, plus the forms people spell differently.

    ``flash_attn_varlen`` gives itself and flash, attn, varlen; ``scaled_dot_product_attention``
    also gives its acronym ``sdpa``; ``MoE`` gives ``moe``; and hyphenated words give their
    compound, so "all-reduce" meets "allreduce" and "EAGLE-3" meets "eagle3". Words of other
    scripts are kept lower-cased, unstemmed (Chinese, Japanese, Korean: character pairs).
    """
    out: list[str] = []
    previous, previous_end = "", -1
    text = _BLOB.sub(" ", text)
    for match in _WORD.finditer(text):
        word = match.group(0)
        whole = word.lower()
        if "_" in word or not word.islower():
            parts = [p.lower() for p in _CAMEL.findall(word.replace("_", " "))]
        else:
            parts = [whole]
        if len(parts) > 1 and len(whole) >= 3:
            out.append(_stem(whole))
            letters = [p for p in parts if not p.isdigit()]
            if "_" in word and len(letters) >= 3:
                out.append("".join(p[0] for p in letters))
        for part in parts:
            if len(part) < 2 or part in _STOP or part.isdigit():
                continue
            out.append(_stem(part))
        hyphenated = previous and text[previous_end : match.start()] == "-"
        if hyphenated and len(previous) + len(whole) <= 20:
            out.append(_stem(previous + whole))
        previous, previous_end = whole, match.end()
    if not text.isascii():
        out += _other_script_terms(text)
    return out


# Words in other scripts: a run of letters with at least one outside ASCII ("ошибка",
# "café", "修复内存泄漏"). Scripts written without spaces (Chinese, Japanese, Korean) give their
# character pairs, the usual unit for matching them without a dictionary.
_NON_ASCII_WORD = re.compile(r"[^\W\d_]*[^\x00-\x7f\W\d_][^\W\d_]*")
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
# Sixty characters without a space, dot or underscore: a pasted key, hash or base64 run, not
# prose or a path; split by case and digits it would be hundreds of "words" from nothing said.
_BLOB = re.compile(r"[^\s_.]{60,}")
# A pasted blob of letters is not words: at most this many terms from one run.
MAX_RUN_TERMS = 64


def _other_script_terms(text: str) -> list[str]:
    out: list[str] = []
    for match in _NON_ASCII_WORD.finditer(text):
        word = match.group(0).lower()
        pieces = _UNSPACED.split(word)
        out += [p for p in pieces if len(p) >= 2][:MAX_RUN_TERMS]
        for run in _UNSPACED.findall(word):
            pairs = [run[i : i + 2] for i in range(len(run) - 1)] or [run]
            out += pairs[:MAX_RUN_TERMS]
    return out


# "Fixed #24351, #24346 -- ..." and "fixes #1 and #2": every number of the list is claimed.
_CLAIM_LIST_TAIL = re.compile(r"\s*(?:,|&|\band\b)\s*(?:[\w.-]+/[\w.-]+)?#(\d+)", re.I)


def claimed_issues(body: str, title: str = "") -> set[int]:
    """Issues the PR says it fixes, closes or resolves."""
    text = f"{title}\n{_HTML_COMMENT.sub(' ', body or '')}"
    claimed: set[int] = set()
    for match in _CLAIM.finditer(text):
        claimed.add(int(match.group(1)))
        end = match.end()
        while (more := _CLAIM_LIST_TAIL.match(text, end)) is not None:
            claimed.add(int(more.group(1)))
            end = more.end()
    return claimed


# Trackers outside GitHub: Django's Trac ("code.djangoproject.com/ticket/31207", "ticket
# #31207"), Bugzilla ("Bug 702410 - ...", "show_bug.cgi?id=702410"), Redmine-style trackers
# ("tracker.ceph.com/issues/20931" is read as a mention already). Their numbers live in another
# space than the repository's PRs, so they are kept apart: a shared one is shared work, but a
# ticket number equal to a PR number says nothing about that PR.
_EXTERNAL = re.compile(
    r"(?:/ticket/|show_bug\.cgi\?id=|\bbug\s*#?\s*(?=\d{3})|\bticket\s*#?\s*)(\d{1,9})\b", re.I
)


def external_references(body: str, title: str = "") -> set[int]:
    """Ticket and bug numbers of trackers outside the repository (Trac, Bugzilla)."""
    text = f"{title}\n{_HTML_COMMENT.sub(' ', body or '')}"
    return {int(n) for n in _EXTERNAL.findall(text)}


def mentioned_numbers(body: str, title: str = "") -> set[int]:
    """Every ``#N`` or issue/PR URL in the text (weaker evidence than a claim)."""
    text = f"{title}\n{_HTML_COMMENT.sub(' ', body or '')}"
    return {int(n) for n in _MENTION.findall(text)}


# "Stacked on #12", "depends on #12", "follow-up to #12", "Reverts #12", "backport of #12":
# related work, not the same work.
_STACKED = re.compile(
    r"\b(?:stacked\s+on(?:\s+top\s+of)?|depends\s+on|based\s+on|builds?\s+on|"
    r"follow(?:s|-?up)?\s+(?:up\s+)?(?:to|of|on)|split\s+(?:out\s+)?(?:of|from)|"
    r"part\s+\d+\s+of|requires|reverts?|revert\s+of|backports?|backport\s+of|"
    r"cherry-?pick(?:s|ed)?(?:\s+of)?)\s*:?\s*(?:[\w.-]+/[\w.-]+)?#(\d+)",
    re.I,
)


def stacked_on(body: str, title: str = "") -> set[int]:
    """PRs this one says it builds on, follows up, reverts or backports."""
    text = f"{title}\n{_HTML_COMMENT.sub(' ', body or '')}"
    return {int(n) for n in _STACKED.findall(text)}


# A revert names what it undoes: GitHub's button writes 'Revert "<title>"'; people write
# "Revert #123", "Revert PR 123", "Revert commit abc", "[Revert] ...". "Revert to fp32
# accumulation" is a fix in its own right, not a revert of another PR.
_REVERT_TITLE = re.compile(
    r"^\s*(?:\[revert\]|revert(?:s|ing)?\s*(?:[\"'“#]|pr\b|commit\b|\[|[0-9a-f]{7,40}\b))",
    re.I,
)


def is_revert(title: str) -> bool:
    """Whether the title says the PR reverts another PR or commit."""
    return _REVERT_TITLE.match(title or "") is not None
