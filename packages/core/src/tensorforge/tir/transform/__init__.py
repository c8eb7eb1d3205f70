"""Loop-IR passes; the ordered pipeline lives in `pipeline.py`."""
