"""`.ci/run` fails when a test fails and when no test ran, and only then."""

import os
import subprocess

import pytest

pytestmark = pytest.mark.slow

CASES = {
    "passes": ("def test_ok():\n    assert True\n", 0, "CI: OK: 1 test passed, 0 skipped, "
               "0 xfailed"),
    # skipped and xfailed are counted apart (pytest's JUnit XML files both under <skipped>)
    "mixed": ("import pytest\n\ndef test_ok():\n    pass\n\ndef test_ok2():\n    pass\n\n"
              "@pytest.mark.skip('x')\ndef test_s():\n    pass\n\n"
              "@pytest.mark.xfail(reason='known')\ndef test_x():\n    assert False\n\n"
              "@pytest.mark.xfail(reason='known')\ndef test_x2():\n    assert False\n", 0,
              "CI: OK: 2 tests passed, 1 skipped, 2 xfailed"),
    "fails": ("def test_bad():\n    assert False\n", 1, "CI: FAILED: pytest exit status 1"),
    "empty": ("x = 1\n", 1, "CI: FAILED: pytest collected no tests"),
    "skipped": ("import pytest\n\n@pytest.mark.skip('x')\ndef test_s():\n    pass\n", 1,
                "CI: FAILED: no test passed"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_ci_run_exit_status(repo_root, tmp_path, case):
    source, expected_rc, message = CASES[case]
    test_file = tmp_path / f"test_case_{case}.py"
    test_file.write_text(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env.update(CI_SKIP_SETUP="1", CI_JUNIT=str(tmp_path / "junit.xml"), CI_WORKERS="0")
    proc = subprocess.run(["bash", str(repo_root / ".ci" / "run"), "-p", "no:cacheprovider",
                           str(test_file)], capture_output=True, text=True, env=env, timeout=120)
    assert (proc.returncode != 0) == (expected_rc != 0), proc.stdout + proc.stderr
    assert message in proc.stdout + proc.stderr
