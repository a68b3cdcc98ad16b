"""The H200's GPU binary listings as test data (tests/fixtures/h200/gpu_binary/)."""
import json

from kernels.models import Profile
from kernels.services import profile_store
from tests.conftest import H200_FIXTURES
from tests.kernels.kernel_factories import make_kernel, make_task

FIXTURES = H200_FIXTURES / "gpu_binary"


def spill_kernel():
    """The H200's spilling kernel as an archive kernel: its source and its listing."""
    task = make_task(level=1, number=977, op_name="977_Spill_demo")
    kernel = make_kernel(task, code=(FIXTURES / "spill_accumulate_96.cu").read_text(), name="spill_accumulate_96")
    listing = json.loads((FIXTURES / "listings_spill_and_model_new.json").read_text())["spill_accumulate_96"]
    profile_store(kernel_id=kernel.id, kind=Profile.Kind.GPU_BINARY, origin=Profile.Origin.WORKER,
                  raw_text=listing.pop("raw_res_usage"), parsed=listing)
    return kernel
