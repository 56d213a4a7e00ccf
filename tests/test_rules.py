import pytest

from bot.report import rules


def test_builtin_rule_sets_are_valid():
    for name in ("default", "vllm"):
        assert rules.load_builtin(name).version == 1


def test_unknown_key_is_named_with_file_line_and_field():
    text = "checks:\n  changed_files:\n    areass: {}\n"
    with pytest.raises(rules.RulesError) as err:
        rules.load_text(text, ".github/prbot.yml", default="vllm")
    assert str(err.value) == (
        ".github/prbot.yml:3: checks.changed_files.areass: Extra inputs are not permitted"
    )


def test_a_typo_is_named_before_the_field_it_leaves_missing():
    text = "checks:\n  requirements:\n    platforms:\n      cuda:\n        entriez: [a]\n"
    with pytest.raises(rules.RulesError) as err:
        rules.load_text(text, "x.yml")
    assert str(err.value).startswith("x.yml:5: checks.requirements.platforms.cuda.entriez:")
    assert "(and 1 more)" in str(err.value)


def test_invalid_yaml_names_the_line():
    with pytest.raises(rules.RulesError) as err:
        rules.load_text("checks:\n  changed_files: [1\n", "x.yml")
    assert str(err.value).startswith("x.yml:") and "invalid YAML" in str(err.value)


def test_non_mapping_and_unknown_extends():
    with pytest.raises(rules.RulesError, match="mapping"):
        rules.load_text("- a\n- b\n", "x.yml")
    with pytest.raises(rules.RulesError, match="unknown rule set 'nope'"):
        rules.load_text("extends: nope\n", "x.yml")
    with pytest.raises(rules.RulesError, match="unknown rule set"):
        rules.load_text("extends: ../../etc/passwd\n", "x.yml")


def test_repository_file_overrides_the_builtin_set_key_by_key():
    ruleset = rules.for_repository(
        "extends: vllm\ncommands:\n  recheck:\n    allow: [admin]\n", default="default"
    )
    assert ruleset.commands.recheck.allow == ["admin"]
    assert "kernels" in ruleset.checks.changed_files.areas  # inherited from vllm


def test_no_repository_file_means_the_default_set():
    assert rules.for_repository(None, default="vllm").checks.requirements.platforms


def test_schema_lists_every_check():
    schema = rules.schema_json()
    for name in ("changed_files", "duplicates", "requirements", "generated_docs"):
        assert name in schema


MY_RULE = (
    "      - name: mine\n"
    "        kind: imports\n"
    "        paths: [pkg/*.py]\n"
    "        expect: [{where: the requirements, paths: [requirements.txt]}]\n"
)


def _integration_names(text: str) -> list[str]:
    return [r.name for r in rules.for_repository(text).checks.integration.rules]


def test_extends_adds_named_rules_to_the_built_in_ones():
    builtin = [r.name for r in rules.load_builtin("vllm").checks.integration.rules]
    text = "extends: vllm\nchecks:\n  integration:\n    rules:\n" + MY_RULE
    assert _integration_names(text) == [*builtin, "mine"]


def test_a_rule_with_a_built_in_name_replaces_that_one_in_place():
    builtin = [r.name for r in rules.load_builtin("vllm").checks.integration.rules]
    text = "extends: vllm\nchecks:\n  integration:\n    rules:\n" + MY_RULE.replace(
        "name: mine", f"name: {builtin[0]}"
    )
    ruleset = rules.for_repository(text)
    assert [r.name for r in ruleset.checks.integration.rules] == builtin
    assert ruleset.checks.integration.rules[0].kind == "imports"


def test_replace_and_append_are_explicit():
    indented = "".join("  " + line + "\n" for line in MY_RULE.splitlines())
    text = "extends: vllm\nchecks:\n  integration:\n    rules:\n      replace:\n" + indented
    assert _integration_names(text) == ["mine"]
    # A plain list (a policy) replaces; {append: ...} adds to the built-in one.
    ruleset = rules.for_repository("commands:\n  recheck:\n    allow: {append: [triage]}\n")
    assert ruleset.commands.recheck.allow == ["author", "write", "maintain", "admin", "triage"]
    ruleset = rules.for_repository("commands:\n  recheck:\n    allow: {replace: [admin]}\n")
    assert ruleset.commands.recheck.allow == ["admin"]


def test_a_symbol_rule_without_added_is_refused_with_its_line():
    text = (
        "extends: vllm\nchecks:\n  integration:\n    rules:\n"
        "      - name: no-pattern\n"
        "        paths: [vllm/registry.py]\n"
        "        expect: [{where: the docs, paths: [docs/x.md]}]\n"
    )
    with pytest.raises(rules.RulesError) as err:
        rules.for_repository(text)
    assert str(err.value).startswith(
        ".github/prbot.yml:5: checks.integration.rules.0.added: symbol rule 'no-pattern' needs"
    )


def test_command_aliases_are_validated():
    ruleset = rules.for_repository("commands:\n  recheck:\n    aliases: [retest, ci run]\n")
    assert ruleset.commands.spellings()["ci run"] == "recheck"
    for bad in ("[help]", "['Ci Run']", "['/retest']"):
        with pytest.raises(rules.RulesError) as err:
            rules.for_repository(f"commands:\n  recheck:\n    aliases: {bad}\n")
        assert str(err.value).startswith(".github/prbot.yml:")


def test_hostile_rule_files_are_refused_quickly():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{b}: &{b} [{', '.join(['*' + a] * 9)}]\n"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    )
    with pytest.raises(rules.RulesError, match="expands to more than 100,000 nodes"):
        rules.for_repository(bomb)
    with pytest.raises(rules.RulesError, match="more than 50 YAML aliases"):
        rules.for_repository("a: &a 1\nb: [" + ", ".join(["*a"] * 51) + "]\n")
    with pytest.raises(rules.RulesError, match="nested more than 100 levels"):
        rules.for_repository("a: " + "[" * 200 + "]" * 200 + "\n")
    with pytest.raises(rules.RulesError, match="characters; not read"):
        rules.for_repository("# x\n" * 100_000)
