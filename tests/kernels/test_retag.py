"""Technique tags of kernels already stored: `retag_kernels` after a detector change, and a
kernel's stored GPU-binary listing (its SASS) tagging it as it lands."""
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from evaluator.worker_profiles import gpu_listings_import
from kernels.models import Kernel, Profile
from kernels.services import kernel_techniques_refresh, profile_store
from kernels.techniques import decode_tags
from tests.kernels.kernel_factories import make_kernel, make_task

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "h200" / "gpu_binary"
# Written for this test: a copy staged with inline PTX, no cp.async outside the asm string.
CP_ASYNC = r'''
__global__ void copy_tile(const float4* g, float* out) {
    extern __shared__ float4 buf[];
    unsigned s = __cvta_generic_to_shared(buf + threadIdx.x);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(g + threadIdx.x));
    asm volatile("cp.async.wait_all;\n" ::);
    out[threadIdx.x] = buf[threadIdx.x].x;
}
'''
PLAIN = "__global__ void add(const float* a, float* out) { out[threadIdx.x] = a[threadIdx.x] + 1.0f; }"


def test_retag_command_tags_inline_ptx_of_kernels_tagged_before():
    task = make_task()
    stale = make_kernel(task, 0, code=CP_ASYNC, technique_tags=",shared_memory_tiling,")  # the old detector's tags
    plain = make_kernel(task, 1, code=PLAIN)
    out = StringIO()
    call_command("retag_kernels", stdout=out)
    assert "1 kernel(s) retagged" in out.getvalue()
    stale.refresh_from_db()
    assert "async_copy" in decode_tags(stale.technique_tags)
    assert Kernel.objects.get(id=plain.id).technique_tags == ""
    assert kernel_techniques_refresh() == 0  # a second run changes nothing


def test_a_stored_listing_tags_from_its_sass():
    kernel = make_kernel(make_task(), code=PLAIN)
    assert kernel.technique_tags == ""
    listing = json.loads((FIXTURES / "listings_spill_and_model_new.json").read_text())["spill_accumulate_96"]
    # The real H200 listing, with one instruction the compiler emits for cp.async planted in it.
    listing["functions"][0]["sass"] += "\n/*9000*/ @!P0 LDGSTS.E.BYPASS.128 [R5], desc[UR4][R2.64] ;"
    profile_store(kernel_id=kernel.id, kind=Profile.Kind.GPU_BINARY, origin=Profile.Origin.WORKER,
                  raw_text="", parsed=listing)
    kernel.refresh_from_db()
    assert decode_tags(kernel.technique_tags) == ["async_copy"]
    call_command("retag_kernels", "--kernel", str(kernel.id), stdout=StringIO())  # the SASS still counts
    kernel.refresh_from_db()
    assert decode_tags(kernel.technique_tags) == ["async_copy"]


def test_real_listing_without_such_instructions_adds_no_tag(tmp_path):
    kernel = make_kernel(make_task(), code=PLAIN)
    listing = json.loads((FIXTURES / "listings_spill_and_model_new.json").read_text())["spill_accumulate_96"]
    path = tmp_path / "listings.json"
    path.write_text(json.dumps({"kernels": {"k": {"code_sha256": kernel.code_sha256, "listing": listing}}}))
    assert gpu_listings_import(path=path)["stored"] == 1
    kernel.refresh_from_db()
    assert kernel.technique_tags == ""
