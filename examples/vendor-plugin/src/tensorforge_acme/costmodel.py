"""A roofline cost model: the code the plugin's CostModel descriptor points at."""


class RooflineModel:
    """Predict seconds as max(flops / peak_flops, bytes / bandwidth)."""

    def __init__(self, peak_flops: float = 1e12, bandwidth: float = 1e11) -> None:
        self.peak_flops, self.bandwidth = peak_flops, bandwidth

    def predict(self, features: list[dict]) -> list[float]:
        return [max(f["flops"] / self.peak_flops, f["bytes"] / self.bandwidth) for f in features]
