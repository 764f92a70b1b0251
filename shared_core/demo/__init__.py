"""The bundled demo (``python -m shared_core.demo``)."""
