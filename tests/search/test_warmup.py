"""The search model is loaded once per server process when the server imports the WSGI (or ASGI)
application, not by the first search."""
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

PROBE = ("import archive_site.{module}\n"
         "from search import embedding\n"
         "print('models loaded:', embedding.load_model.cache_info().currsize)\n")


@pytest.mark.parametrize("module, warm_up, loaded", [("wsgi", "1", 1), ("asgi", "1", 1), ("wsgi", "0", 0)])
def test_importing_the_application_loads_the_model_once(tmp_path, module, warm_up, loaded):
    env = dict(os.environ, ARCHIVE_DATA_DIR=str(tmp_path), ARCHIVE_SEARCH_WARM_UP=warm_up,
               DJANGO_SETTINGS_MODULE="archive_site.settings")
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"models loaded: {loaded}" in done.stdout
