"""Relational state-space engine: explicit-state model checking as Spark SQL over Delta tables."""
from engine.errors import EngineError, ModelError, UsageError, WarehouseError
from engine.model.loader import Model, RunSpec, list_models, load_model, resolve_run

__all__ = ["EngineError", "ModelError", "UsageError", "WarehouseError", "Model", "RunSpec",
           "list_models", "load_model", "resolve_run", "check"]


def check(*args, **kwargs):
    """Run a check (see engine.search.loop.check); imported lazily so that loading models stays light."""
    from engine.search.loop import check as _check
    return _check(*args, **kwargs)
