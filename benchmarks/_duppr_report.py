"""The Markdown page of benchmarks/duplicates_real.py (docs/benchmarks/duplicates_real.md)."""

from __future__ import annotations

from _duppr_curve import STRICT_FALSE, TARGET_FALSE, TARGET_FLAGGED, TARGET_PRECISION
from _duppr_systems import TFIDF_ALERT_COSINE, VLLM_THRESHOLD

from bot.duplicates.config import DuplicatesRules
from bot.duplicates.scoring import SPECIFIC_WORDS, TEXT_ONLY_ALIKE

RULES_THRESHOLD = DuplicatesRules().likely_duplicate_score
RULES_TEXT_ONLY = DuplicatesRules().text_only_likely_duplicate_score
RULES_LEAD = DuplicatesRules().text_only_lead
RULES_ISSUE = DuplicatesRules().text_only_shared_issue_score
RULES_ISSUE_LEAD = DuplicatesRules().text_only_shared_issue_lead
POOL_QUERIES = 200


def _ratio(a: dict, b: dict, k: str) -> str:
    """System a's recall@k over b's, of their hits (the same queries), not of rounded recalls.
    Three places: 1.247 must not read as the 1.25× target met."""
    top, bottom = a.get("hits", a["recall"])[k], b.get("hits", b["recall"])[k]
    return f"{top / bottom:.3f}×" if bottom else "—"


SYSTEM_NAMES = {
    "prbot": "prbot",
    "prbot_embeddings": "prbot with prbot[embeddings]",
    "prbot_no_clock": "prbot without the number clock",
    "vllm": "vLLM's checker (all-MiniLM-L6-v2)",
    "tfidf": "TF-IDF cosine (title + body)",
}


def _curve_table(curve: dict) -> list[str]:
    lines = [
        "| threshold | flagged | right | true duplicates flagged | top flag right | false alerts |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for p in curve["points"]:
        lines.append(
            f"| {p['threshold']:.2f} | {p['flagged']} | {p['right']} | {p['flagged_share']:.1%} | "
            f"{p['precision']:.1%} | {p['false_alert_rate']:.2%} |"
        )
    return lines


def _rule(rule) -> str:
    return "none" if rule is None else "(" + ", ".join(f"{v:g}" for v in rule) + ")"


def markdown(result: dict[str, dict], command: str) -> str:
    overall = result["overall"]
    p, t = overall["prbot"], overall["tfidf"]
    v, e = overall.get("vllm"), overall.get("prbot_embeddings")
    lines = [
        "# Duplicate-work audit on real duplicate PRs (DupPR)",
        "",
        f"Produced by `{command}` (data: see the script's docstring; nothing of the corpus is "
        "committed).",
        "",
        "Setting: the DupPR pairs of the 13 development repositories, records cut to number, "
        "title and body. PRs are replayed in number order per repository; each is queried "
        "against the same repository's lower-numbered PRs (the corpus has text only for PRs "
        "in a pair). A query's true duplicates are the earlier PRs of its group; the first PR "
        "of every group has no earlier duplicate and is a negative. All systems run in the same "
        "run on the same queries and candidates: prbot as `prbot duplicates --min-score 0` "
        "ranks (every scored candidate), with and without prbot[embeddings] (the embedded "
        "text leaves out the lines of the repository's PR template, learned from the PRs "
        "before it, as the term comparison does); vLLM's own "
        "checker (`.github/workflows/scripts/detect_duplicate_prs.py`: its exact text "
        "`Title: …\\nBody: <first 800 characters>`, all-MiniLM-L6-v2 through prbot[embeddings]' "
        "encoder, the 500 most recent earlier PRs, its top-20 re-score with file Jaccard, which "
        "is 0 here, and its 0.75 hint threshold); and TF-IDF cosine on title + body "
        "(scikit-learn's defaults, idf over the repository's pool). Every pair here is text "
        "only, so `likely_duplicate` uses the rules' default `text_only_likely_duplicate_score` "
        f'({RULES_TEXT_ONLY}). "Without the number clock" is '
        "prbot with no time signal at all (records have no dates; by default PR numbers "
        "stand in for time).",
        "",
        "## Overall",
        "",
        f"{overall['prs']} PRs; {p['queries_with_duplicates']} queries with an earlier "
        f"duplicate, {p['queries_without']} without.",
        "",
        "| system | recall@1 | recall@5 | recall@10 | recall@20 | flagged | right | "
        "false alerts | median query |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, name in SYSTEM_NAMES.items():
        s = overall.get(key)
        if s is None:
            continue
        r = s["recall"]
        lines.append(
            f"| {name} | {r['@1']:.3f} | {r['@5']:.3f} | {r['@10']:.3f} | {r['@20']:.3f} | "
            f"{s['flagged']} | {s['precision']:.1%} | {s['false_alert_rate']:.1%} | "
            f"{s['median_query_ms']:.2f} ms |"
        )
    lines.append("")
    if v is not None and e is not None:
        lines.append(
            "Against vLLM's checker: prbot recall@1 "
            f"**{_ratio(p, v, '@1')}** "
            f"without the extra and **{_ratio(e, v, '@1')}** with it "
            f"(target ≥ 1.25×); recall@20 {p['recall']['@20']:.3f} and {e['recall']['@20']:.3f} "
            f"against {v['recall']['@20']:.3f} (target: at least as high). "
            f"Against TF-IDF: recall@1 {_ratio(p, t, '@1')}, "
            f"recall@20 {_ratio(p, t, '@20')}."
        )
    else:
        lines.append(
            "prbot[embeddings] is not installed in this run: vLLM's checker and prbot with "
            "embeddings were not measured (`uv sync --extra embeddings`)."
        )
    lines += [
        "",
        '"Right": the first candidate flagged is a true duplicate; a flag on a PR without one '
        f"is wrong. vLLM's flags are its hint (score ≥ {VLLM_THRESHOLD}); TF-IDF's are "
        f"cosine ≥ {TFIDF_ALERT_COSINE}.",
        "",
        "## Alerts: the precision/recall curve",
        "",
        "A `likely_duplicate` alert at each threshold of `checks.duplicates."
        "text_only_likely_duplicate_score` (the rules' choice; the rest of the text-only rule "
        f"as in the code: cosine ≥ {TEXT_ONLY_ALIKE}, shared rare words ≥ {SPECIFIC_WORDS}, "
        f"the top candidate leading the next by ≥ {RULES_LEAD}; a top candidate naming the same "
        f"specific issue as the query instead at score ≥ {RULES_ISSUE} and lead ≥ "
        f"{RULES_ISSUE_LEAD}, whatever the threshold): PRs flagged, flags "
        "right, the share of the queries with a true duplicate whose top flag is right, and "
        "false alerts among the PRs without one. Targets: ≥ "
        f"{TARGET_FLAGGED:.0%} flagged, top flag right ≥ {TARGET_PRECISION:.0%}, false "
        f"alerts ≤ {TARGET_FALSE:.0%}.",
    ]
    rule = overall.get("alert_rule")
    if rule:
        lines += [
            "",
            "### The text-only rule, chosen leave-one-repository-out",
            "",
            "A decision over the top candidate: when it names the same specific issue as the "
            "query (each fixes or mentions it, or both name one outside tracker's ticket; "
            "an issue at most six open PRs name), it "
            "is flagged at its own score bar and lead over the runner-up; otherwise its "
            "wording must pass the cosine and rare-word bars, lead the runner-up by the lead "
            "bar and reach the score threshold. Searched over cosine bar × rare-word bar × "
            "lead × threshold × issue lead × issue score bar (`benchmarks/_duppr_curve.py`), "
            "one rule for both installs: for each repository, the rule flagging the most true "
            "duplicates on the other twelve while meeting the precision and false-alert "
            "targets there for prbot with and without the extra; that repository is then "
            "judged at it. Chosen on all 13 (cosine, words, lead, threshold, issue lead, "
            f"issue score): {_rule(rule['chosen'])}; in the code and the rules: "
            f"({TEXT_ONLY_ALIKE}, {SPECIFIC_WORDS}, {RULES_LEAD}, {RULES_TEXT_ONLY}, "
            f"{RULES_ISSUE_LEAD}, {RULES_ISSUE}) (`checks.duplicates.text_only_lead`, "
            "`text_only_likely_duplicate_score`, `text_only_shared_issue_lead`, "
            "`text_only_shared_issue_score`).",
            "",
        ]
        strict = overall.get("alert_rule_strict")
        lines += _held_out(rule, "at the targets")
        if strict:
            lines += _held_out(strict, f"folds choosing at ≤ {STRICT_FALSE:.1%} false alerts")
        lines += [
            "A rule chosen at the edge of the targets on twelve repositories can miss them on "
            f"the thirteenth. The stricter fold bar ({STRICT_FALSE:.1%} false alerts) is a "
            "margin for that; it was set after seeing held-out points at several bars, so "
            "its row is not a clean held-out figure.",
            "",
            "The code and the rules take the rule the stricter search chose on all 13. On the "
            "labelled sets' text-only records (`benchmarks/duplicates_eval.py`, "
            "`tests/test_duplicates_eval.py`, without the extra; bound 5%) it gives 0.0% "
            "false alerts on the labelled set and 4.5% on the reviewer's set (the rule before "
            "it: 1.6% and 0.0%). The curves below say what each threshold gives here.",
        ]
    for key in ("prbot", "prbot_embeddings", "vllm"):
        curve = overall["curves"].get(key)
        if curve is None:
            continue
        loro = curve["leave_one_repo_out"]
        chosen = sorted({t for t in loro["thresholds"].values() if t is not None})
        lines += ["", f"### {SYSTEM_NAMES[key]}", "", *_curve_table(curve), ""]
        best = curve["best"]
        lines.append(
            "Lowest threshold meeting the precision and false-alert targets on all 13: "
            + (f"{best:.2f}." if best is not None else "none.")
            + " Leave-one-repository-out (each repository at the threshold the other twelve "
            f"choose; chosen: {', '.join(f'{c:.2f}' for c in chosen) or 'none'}): "
            f"{loro['flagged_share']:.1%} of true duplicates flagged, top flag right "
            f"{loro['precision']:.1%}, false alerts {loro['false_alert_rate']:.2%}."
        )
    pools = [overall[k] for k in ("query_ms_at_pool", "query_ms_at_large_pool") if k in overall]
    if pools:
        sizes = " and ".join(f"{p['open_prs']:,}" for p in pools)
        lines += [
            "",
            f"## Time per query at {sizes} open PRs",
            "",
            f"{pools[0]['open_prs']:,}: the first PRs of the 13 repositories in one index. "
            + (
                f"{pools[1]['open_prs']:,}: synthetic PRs, each the title of one corpus PR with "
                "the body of another, drawn at random (prbot with the extra borrows the title "
                "PR's vector; TF-IDF is not measured there, its pure-Python cosines would take "
                "hours). "
                if len(pools) > 1
                else ""
            )
            + f"The last {POOL_QUERIES} are asked against all the others; CPU time of the "
            'query alone, on a 2-core machine shared with other work. "Scored": PRs prbot '
            "scored in full per query (`QueryResult.scored`), the work that must stay bounded.",
            "",
            "| system | " + " | ".join(f"{p['open_prs']:,}: median | p95" for p in pools) + " |",
            "| --- | " + " | ".join("---: | ---:" for _ in pools) + " |",
        ]
        for key, name in SYSTEM_NAMES.items():
            cells = [
                f"{p[key]['median']:.2f} ms | {p[key]['p95']:.2f} ms" if key in p else "— | —"
                for p in pools
            ]
            if any(key in p for p in pools):
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append(
            "| prbot: PRs scored (median, max) | "
            + " | ".join(f"{p['scored']['median']:.0f} | {p['scored']['max']:.0f}" for p in pools)
            + " |"
        )
        emb = overall.get("embedding")
        lines += [
            "",
            "vLLM's time is its cosines over 500 precomputed vectors (numpy); its script also "
            "embeds those 500 candidates on every run, which is not counted. prbot embeds each "
            "PR once, when the index row is written"
            + (
                f" ({emb['cpu_ms_per_text']:.0f} ms of CPU per text in this run, batched)."
                if emb and emb.get("cpu_ms_per_text")
                else "."
            ),
        ]
    lines += [
        "",
        "## Reading the figures",
        "",
        "- Negatives are honest but few kinds: the corpus carries titles and bodies only for "
        "PRs in a duplicate pair (its non-duplicate samples are pairs of numbers without text), "
        "so a PR without an earlier duplicate is the first PR of its group, queried against "
        "the PRs before it. It does have a later duplicate, which is never a candidate.",
        "- The number clock is stronger here than on a real list of open PRs: the pool holds "
        "only PRs of pairs, so the PR just before a query is more often its duplicate than it "
        "would be among every open PR. The row without it is the figure to trust for wording. "
        "For that reason prbot's text-only weights were chosen without it "
        "([duplicates_real_weights](duplicates_real_weights.md)): with the clock, the same "
        "search puts its weight on the clock (text weight to the bottom of its grid) and reaches "
        "a higher recall@1 here that would not carry over to real open PRs, which have dates.",
        "- What limits recall: many pairs share no words at all (a one-line typo fix paired "
        "with a locale-file rename: duplicates by code only, which a text-only record cannot "
        "show).",
        '- What limits precision: labels are pairs, not complete groups. Many "wrong" '
        "flags are the same change submitted a third time (identical titles), or a "
        'resubmission ("rebased on master, replaces #N") that the corpus does not pair.',
        "- History: commit e0d5737, which first published this page's vLLM comparison, says "
        '"NOT landed" in its message; it did land.',
        "",
        "## Per repository",
        "",
        "| repository | PRs | queries | prbot r@1 | vLLM r@1 | TF-IDF r@1 | prbot r@5 | "
        "prbot r@20 | vLLM r@20 | TF-IDF r@20 | flagged (right) | false alerts |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in result.items():
        if name == "overall":
            continue
        p, t, v = row["prbot"], row["tfidf"], row.get("vllm")
        v1 = f"{v['recall']['@1']:.3f}" if v else "—"
        v20 = f"{v['recall']['@20']:.3f}" if v else "—"
        lines.append(
            f"| {name} | {row['prs']} | {p['queries_with_duplicates']} | "
            f"{p['recall']['@1']:.3f} | {v1} | {t['recall']['@1']:.3f} | "
            f"{p['recall']['@5']:.3f} | {p['recall']['@20']:.3f} | {v20} | "
            f"{t['recall']['@20']:.3f} | {p['flagged']} ({p['flagged_right']}) | "
            f"{p['false_alerts']} of {p['queries_without']} |"
        )
    return "\n".join(lines) + "\n"


def _held_out(rule: dict, how: str) -> list[str]:
    lines = [
        f"Held out, {how}:",
        "",
        "| held out | true duplicates flagged | top flag right | false alerts |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key, held in rule["held_out"].items():
        lines.append(
            f"| {SYSTEM_NAMES[key]} | {held['flagged_share']:.1%} | "
            f"{held['precision']:.1%} | {held['false_alert_rate']:.2%} |"
        )
    folds = sorted({_rule(r) for r in rule["per_fold"].values()})
    return [*lines, "", "Rules the folds chose: " + "; ".join(folds) + ".", ""]
