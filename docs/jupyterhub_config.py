# jupyterhub_config.py: serving the deck to a class from a JupyterHub (docs/course.md).
#
# Add your authenticator and spawner (the course's own: OAuth, LTI, KubeSpawner, ...) after these
# lines, or load this file from your own config with `load_subconfig("jupyterhub_config.py")`.
# tests/test_hub.py starts a real hub from this very file, adding only a test authenticator
# (DummyAuthenticator), a spawner that runs every student on this machine
# (SimpleLocalProcessSpawner), loopback ports and the paths of its checkout.
import os

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

# The repository as the image holds it (repo2docker copies it to the image's REPO_DIR). It may be
# read-only: every student reads the slides and the warm compile caches in it, and writes nothing
# there.
DECK = os.environ.get("JIT_DECK_DIR", "/srv/jit-deck")

# Each student's server opens the deck's folder on part 1's slideshow.
c.Spawner.notebook_dir = DECK
c.Spawner.default_url = "/rise/slides/01_eager_mode.ipynb"

c.Spawner.environment = {
    # every kernel preloads the deck as it starts, so a student's first Shift+Enter pays no import
    "PYTHONSTARTUP": os.path.join(DECK, "demos", "topics", "_kernel_startup.py"),
    # The warm compile caches are DECK/.cache/ (what `python -m demos warm` filled in the image);
    # set DEMOS_CACHE_DIR where they lie elsewhere. Where that folder cannot be written, each
    # student compiles into a folder of their own, ~/.cache/jit-deck/ (DEMOS_USER_CACHE_DIR moves
    # it), which reads every warm entry of the shared one.
}

c.Spawner.args = [
    # jupyterlab_rise points MathJax at a CDN by default: a class on a closed network loads nothing
    # remote (JupyterLab typesets the slides' math itself)
    "--ServerApp.tornado_settings={'mathjax_url': '/static/nonexistent-mathjax.js'}",
    # a slide a student saves from JupyterLab is stored without outputs
    "--FileContentsManager.pre_save_hook=demos.deck.nbtools.pre_save_hook",
    # the notes window (key t in the slideshow, demos/deck/notes.py): its page, and the deck's lab
    # extension that tells it where the slideshow is (both apps: RISE lists it, JupyterLab serves it)
    "--ServerApp.jpserver_extensions={'demos.deck.notes': True}",
    "--RiseApp.extra_labextensions_path=" + os.path.join(DECK, "assets", "labextension"),
    "--LabApp.extra_labextensions_path=" + os.path.join(DECK, "assets", "labextension"),
    # a kernel keeps what it measured: each part's kernel, left running in a tab, holds 0.5-1 GiB
    # (docs/course.md); one idle for 30 minutes is shut down, tab open or not
    "--MappingKernelManager.cull_idle_timeout=1800",
    "--MappingKernelManager.cull_connected=True",
]

# Per student, from the sizing table in docs/course.md: the server and one part's kernel peak at
# 1.3 GiB from warm caches and 2.0 GiB from cold ones; a class running a cell at once needs about
# half a core each. Spawners that enforce these (KubeSpawner, SystemdSpawner, DockerSpawner) read
# them; the local spawners ignore them.
c.Spawner.mem_guarantee = "1.5G"
c.Spawner.mem_limit = "3G"
c.Spawner.cpu_guarantee = 0.5
c.Spawner.cpu_limit = 2.0
