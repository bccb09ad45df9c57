"""`gemma_vision.retain_freed_host_memory`: after it, large blocks freed and allocated again
take no page faults. Runs in a child process, since the setting is process-wide."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import resource
    import gemma_vision

    def churn():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for mib in (24, 48, 96, 12, 160, 40):
            block = b"\\x01" * (mib << 20)  # malloc'd and written (NumPy would ask for huge pages)
            del block
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    default = churn()
    accepted = gemma_vision.retain_freed_host_memory()
    churn()  # the heap grows to its working size once
    print(accepted, default, churn())
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_freed_blocks_are_reused_without_faults():
    out = subprocess.run([sys.executable, "-c", CHILD], check=True, capture_output=True, text=True).stdout
    accepted, default, retained = out.split()
    pages = (24 + 48 + 96 + 12 + 160 + 40) * 256
    assert accepted == "True"
    assert int(default) > pages // 4, f"the default policy refaults: {default} of {pages} pages"
    assert int(retained) < pages // 100, f"{retained} faults for {pages} pages touched"
