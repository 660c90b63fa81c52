"""The ``winagg`` command: every subcommand answers --help."""

import pytest

from winagg.cli import build_parser, main


def _subcommands():
    parser = build_parser()
    actions = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return sorted(actions[0].choices)


def test_every_subcommand_has_help(capsys):
    assert set(_subcommands()) >= {"demo", "algorithms", "bench", "pipeline"}
    for name in _subcommands():
        with pytest.raises(SystemExit) as stop:
            main([name, "--help"])
        assert stop.value.code == 0
        assert f"winagg {name}" in capsys.readouterr().out


def test_pipeline_help_names_its_options(capsys):
    with pytest.raises(SystemExit):
        main(["pipeline", "--help"])
    text = capsys.readouterr().out
    for flag in ("--input", "--output", "--time", "--value", "--by", "--windows", "--master", "--stream",
                 "--lateness", "--replay-files", "--files-per-batch", "--no-progress"):
        assert flag in text


@pytest.mark.parametrize("value,problem", [("0", "expected 1 or more, got 0"), ("two", "expected a whole number")])
def test_pipeline_refuses_a_replay_of_no_files_naming_the_argument(capsys, value, problem):
    with pytest.raises(SystemExit) as stop:
        main(["pipeline", "--stream", "--replay-files", value])
    assert stop.value.code == 2
    assert f"argument --replay-files: {problem}" in capsys.readouterr().err


def test_pipeline_replay_options_reach_the_config_and_their_defaults_match_its_own(capsys):
    from winagg.cli import _given
    from winagg.spark.pipeline import PipelineConfig

    args = build_parser().parse_args(["pipeline", "--stream", "--replay-files", "6", "--files-per-batch", "3"])
    config = PipelineConfig(**_given(replay_files=args.replay_files, files_per_batch=args.files_per_batch))
    assert (config.replay_files, config.files_per_batch) == (6, 3)
    with pytest.raises(SystemExit):
        main(["pipeline", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the help lines
    defaults = PipelineConfig()
    assert f"(default: {defaults.replay_files})" in text and f"(default: {defaults.files_per_batch})" in text


def test_algorithms_columns_are_aligned(capsys):
    import winagg

    assert main(["algorithms"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0]
    columns = {name: header.index(name) for name in ("order", "inverse", "space", "time per operation")}
    for info in winagg.algorithms():
        row = next(line for line in lines if line.startswith(info.name + " "))
        assert row[columns["order"]:].startswith(info.order + " ")
        assert row[columns["inverse"]:].startswith("needed" if info.needs_inverse else "-")
        assert row[columns["space"]:].startswith(info.space.split()[0])
        assert row[columns["time per operation"]:].startswith(info.time.split()[0])


def test_warm_names_an_unknown_group(capsys):
    assert main(["warm", "--groups", "rollin"]) == 2
    assert "'rollin'" in capsys.readouterr().err
