import pytest
import torch


@pytest.fixture(autouse=True, scope="package")
def _one_thread():
    """Batch-1 decoding of tiny models gains nothing from a second thread, and on a busy 2-core machine the
    thread pool's spinning makes it ~10x slower; restore the setting for other test packages."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
