"""Datasheet memory bandwidth of the GPUs gemmtune is measured on (the rows of
src/core/gt_roofline.c, which also holds the compute rates; tests/cli/test_datasheets_agree.sh
fails when the two differ).

The issues' absolute bandwidth bars are H200 figures. A run on another part keeps the H200
verdict and prints beside it the same fraction of its own datasheet, as kernels_bench does:
`scaled_bar(4.6, "NVIDIA H100 80GB HBM3", 132)` is (3350.0, 3.21...)."""

H200_GBPS = 4800.0

# (a substring of the device name, SM count or 0 for any, GB/s)
DATASHEETS = (
    ("H200", 0, 4800.0),
    ("H100", 132, 3350.0),  # SXM
    ("H100", 114, 2000.0),  # PCIe
    ("A100", 108, 2039.0),
)


def gbps(device_name, sm_count=0):
    """The datasheet bandwidth of the device in GB/s, or None for a part not in the table (an
    SM count of 0 matches any row of its name)."""
    for name, sms, bw in DATASHEETS:
        if name in (device_name or "") and (sms == 0 or not sm_count or sms == sm_count):
            return bw
    return None


def scaled_bar(bar_tbs, device_name, sm_count=0):
    """(this device's GB/s, bar_tbs scaled to it) for a known part other than the H200, else
    None: on the H200 the bar is the bar, and an unknown part has nothing to scale by."""
    bw = gbps(device_name, sm_count)
    if bw is None or bw == H200_GBPS:
        return None
    return bw, bar_tbs * bw / H200_GBPS
