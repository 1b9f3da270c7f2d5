import pytest


@pytest.fixture
def data_dir(settings, tmp_path):
    """Tarn's data dir for one test: the backups, the vault and the SSH key of a throw-away install."""
    settings.DATA_DIR = tmp_path
    return tmp_path
