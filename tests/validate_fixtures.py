"""What the tests of ``autopad validate`` share (tests/test_validate*.py): the fixture of probes measured on
the H200, and the header line of ncu's CSV (long format) that the parser tests and the fake ncu print."""

from __future__ import annotations

from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "h200_shared_probes.json"

# the "ID", ..., "Metric Value" header of ``ncu --csv`` in its default (long) format
NCU_HEAD = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
    '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
)
