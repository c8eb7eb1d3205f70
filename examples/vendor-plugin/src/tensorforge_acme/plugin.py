"""Hook implementations: register descriptors only, import nothing heavy."""

from tensorforge.plugins import CostModel, TargetTag, hookimpl
from tensorforge.target import TargetKind, TargetOption

ACME = TargetKind(
    name="acme",
    device_type="acme",
    options={
        "cores": TargetOption(int, 4, "number of ACME compute cores"),
        "sram-kb": TargetOption(int, 512, "on-chip scratchpad per core, KiB"),
    },
    build="tensorforge_acme.codegen:build",
    description="ACME Corp. matrix accelerator (example plugin)",
)


@hookimpl
def register_targets(register):
    register(ACME)


@hookimpl
def register_target_tags(register):
    register(TargetTag("acme/a1", "acme -cores=16 -sram-kb=1024", "ACME A1 board"))


@hookimpl
def register_cost_models(register):
    register(CostModel("acme-roofline", "tensorforge_acme.costmodel:RooflineModel",
                       "predicts run time from flops and bytes moved"))
