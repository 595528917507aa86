"""`tfcnnwrap completion bash|zsh|fish` (issue 22.12): the script comes from the CLI's own parser, and bash,
having sourced it, completes verbs, flags and choices."""

import shutil
import subprocess

import pytest
from conftest import assert_clean_error, cli_env, run_cli

from tfcnnwrap.cli import VERB_MODULES, build_parser
from tfcnnwrap.cli import shellcompletion as completion

FLAG_SAMPLES = ("--cool-to", "--fail-on-regression", "--vendor-dir")


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_script_names_every_verb_and_flag(shell):
    text = completion.script(shell)
    for verb in VERB_MODULES:
        assert verb in text, (shell, verb)
    for flag in FLAG_SAMPLES:
        assert flag in text, (shell, flag)


@pytest.mark.slow
@pytest.mark.parametrize("shell", completion.SHELLS)
def test_completion_verb_prints_the_script(shell):
    result = run_cli("completion", shell)
    assert result.returncode == 0, result
    assert result.stdout.endswith("\n") and result.stderr == ""
    assert result.stdout.rstrip("\n") == completion.script(shell).rstrip("\n")


@pytest.mark.slow
def test_unknown_shell_is_one_line_exit_2():
    assert_clean_error(run_cli("completion", "csh"), 2, "bash", "zsh", "fish")


def _bash(script, body):
    return subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", "source %s\n%s" % (script, body)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        timeout=60,
    )


def _complete(words, cword):
    """Bash lines that ask the registered completion function for ``words`` with the cursor on ``cword``."""
    return (
        'COMP_WORDS=(%s); COMP_CWORD=%d; COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}\n'
        'f=$(complete -p tfcnnwrap | sed -n "s/.* -F \\([^ ]*\\) .*/\\1/p")\n'
        '"$f" tfcnnwrap "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"\n'
        'printf "%%s\\n" "${COMPREPLY[@]}"\n' % (" ".join("'%s'" % w for w in words), cword)
    )


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("bash"), reason="bash is not installed")
def test_bash_sources_it_and_completes_verbs_flags_and_choices(tmp_path):
    path = tmp_path / "tfcnnwrap.bash"
    path.write_text(run_cli("completion", "bash").stdout, encoding="utf-8")
    registered = _bash(path, "complete -p tfcnnwrap")
    assert registered.returncode == 0, registered
    assert b"tfcnnwrap" in registered.stdout and b"-F" in registered.stdout
    verbs = _bash(path, _complete(["tfcnnwrap", "co"], 1)).stdout.decode().split()
    assert sorted(verbs) == ["compare", "completion", "config"]
    flags = _bash(path, _complete(["tfcnnwrap", "sweep", "--cool"], 2)).stdout.decode().split()
    assert sorted(flags) == ["--cool-to", "--cooldown"]
    formats = _bash(path, _complete(["tfcnnwrap", "report", "--format", ""], 3)).stdout.decode().split()
    report = next(
        a for a in build_parser()._subparsers._group_actions[0].choices["report"]._actions if a.dest == "format"
    )
    assert formats == list(report.choices)


@pytest.mark.slow
@pytest.mark.parametrize("shell, check", [("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])])
def test_zsh_and_fish_scripts_parse(tmp_path, shell, check):
    if not shutil.which(check[0]):
        pytest.skip("%s is not installed" % check[0])
    path = tmp_path / ("tfcnnwrap." + shell)
    path.write_text(completion.script(shell), encoding="utf-8")
    result = subprocess.run(check + [str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert result.returncode == 0, result.stderr.decode()


@pytest.mark.slow
def test_help_does_not_import_shtab():
    import sys

    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from tfcnnwrap.cli import main\n"
            "try:\n    main(['completion', '--help'])\nexcept SystemExit:\n    pass\n"
            "assert 'shtab' not in sys.modules, 'shtab imported'",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr.decode()
