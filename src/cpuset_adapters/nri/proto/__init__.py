"""Generated protobuf modules for NRI and its ttrpc envelope (``tools/genproto.py``)."""
