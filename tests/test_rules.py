import pytest

from bot import rules


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
