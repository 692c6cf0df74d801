"""The Binder image, checked without Docker.

``jupyter-repo2docker --no-build --debug .`` prints the Dockerfile that Binder
would build from this repository (about a second, no Docker daemon). The tests
read that Dockerfile: which build pack was chosen, in which order the layers
come (the heavy conda layer must not depend on the repository's other files,
so a commit that changes a lesson reuses it), what runs after the copy, and
where a learner lands.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
REPO2DOCKER = Path(sys.executable).parent / "jupyter-repo2docker"
LESSON_00 = "notebooks/00_start_here.ipynb"

pytestmark = pytest.mark.timeout(120)

ENV_INSTALL = re.compile(r'env update -p \$\{NB_PYTHON_PREFIX\} --file "binder/environment\.yml"')
REPO_COPY = re.compile(r"^COPY --chown=\S+ src/ \$\{REPO_DIR\}/$", re.M)
ANY_REPO_FILE_COPY = re.compile(r"^COPY --chown=\S+ src/(\S*)", re.M)
POST_BUILD = re.compile(r"^RUN \./binder/postBuild$", re.M)


def binder_package_names() -> set[str]:
    deps = yaml.safe_load((ROOT / "binder" / "environment.yml").read_text())["dependencies"]
    return {re.split(r"[\s<>=!]", d, maxsplit=1)[0] for d in deps if isinstance(d, str)}


@pytest.fixture(scope="module")
def dockerfile() -> str:
    assert REPO2DOCKER.exists(), f"{REPO2DOCKER} is missing (pip install -e '.[test]')"
    result = subprocess.run([str(REPO2DOCKER), "--no-build", "--debug", str(ROOT)],
                            capture_output=True, text=True, timeout=90,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-3000:]
    text = result.stdout + result.stderr
    assert "FROM " in text, f"no Dockerfile in repo2docker's output:\n{text[-3000:]}"
    return text


def test_repo2docker_picks_the_conda_build_pack_from_binder_environment_yml(dockerfile):
    assert "Building conda environment" in dockerfile
    assert ENV_INSTALL.search(dockerfile), "binder/environment.yml is not installed"


def test_environment_is_installed_before_the_repository_is_copied(dockerfile):
    install = ENV_INSTALL.search(dockerfile)
    copy = REPO_COPY.search(dockerfile)
    assert install and copy, "the environment install or the repository copy is missing"
    assert install.start() < copy.start()


def test_only_the_environment_file_is_copied_before_the_environment_layer(dockerfile):
    """Any other repository file copied earlier would invalidate the conda layer on a commit."""
    install = ENV_INSTALL.search(dockerfile).start()
    early = [m.group(1) for m in ANY_REPO_FILE_COPY.finditer(dockerfile[:install])]
    assert early == ["binder/environment.yml"]


def test_post_build_runs_after_the_copy_and_installs_the_package(dockerfile):
    post_build = POST_BUILD.search(dockerfile)
    assert post_build, "binder/postBuild is not run"
    assert post_build.start() > REPO_COPY.search(dockerfile).start()
    script = (ROOT / "binder" / "postBuild").read_text()
    assert re.search(r"^python -m pip install --no-deps -e \.$", script, re.M)


def test_the_installed_environment_uses_the_cpu_pytorch_package(dockerfile):
    # The Dockerfile installs binder/environment.yml (asserted above): read what it names.
    names = binder_package_names()
    assert "pytorch-cpu" in names
    assert not {"pytorch", "pytorch-gpu", "cudatoolkit", "cuda-version"} & names


def test_binder_opens_jupyterlab_at_lesson_00():
    """Binder's start page comes from the link's urlpath (the image's CMD is replaced by
    Binder's own single-user server command), so the README's link is what decides."""
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"https://mybinder\.org/v2/gh/[^)\s`]+", readme)
    assert links, "the README has no Binder link"
    for link in links:
        assert link.endswith(f"?urlpath=lab/tree/{LESSON_00}"), link
    assert (ROOT / LESSON_00).is_file()
    assert "jupyterlab" in binder_package_names()


def test_post_build_serves_the_css_that_wraps_outputs_between_words():
    """Binder's JupyterLab gets make lab's custom.css (JupyterLab's own breaks a check's
    message inside words): postBuild installs it and turns LabApp.custom_css on."""
    script = (ROOT / "binder" / "postBuild").read_text()
    assert re.search(r"^python tools/learner-lab/outputs_css\.py$", script, re.M)
    assert 'echo "c.LabApp.custom_css = True" >> "${HOME}/.jupyter/jupyter_server_config.py"' \
        in script
    assert (ROOT / "tools" / "learner-lab" / "outputs_css.py").is_file()
