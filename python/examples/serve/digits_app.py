"""A Ray Serve deployment of the digit classifier (models/digits), through rtx or iree.runtime.

POST a JSON body ``{"pixels": [64 numbers]}`` (an 8x8 image, row by row) and get back
``{"digit": d, "probabilities": [10 numbers]}``. ``backend`` picks the runtime:

- ``"rtx"``: ``Context.invoke`` on a context with the single-threaded work queue ``s``, so the call
  runs on the replica's own thread, as ``iree.runtime`` runs it;
- ``"rtx-async"``: ``await Context.invoke_awaitable`` on the multi-threaded queue ``mstd``: the call
  runs on rtx's worker threads and the replica's event loop keeps serving meanwhile;
- ``"iree"``: ``iree.runtime``'s function object, called as its users call it.

Everything else is the same: model, device, replicas, request and response.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
from ray import serve
from starlette.requests import Request


@serve.deployment
class Digits:
    def __init__(self, backend: str, model: str, device: str) -> None:
        self.backend = backend
        if backend in ("rtx", "rtx-async"):
            import rtx

            self.context = rtx.Context(device=device, work_queue="s" if backend == "rtx" else "mstd")
            self.context.add_module(rtx.Module.load(model))
            self.predict = self.context.function("predict")
        elif backend == "iree":
            import iree.runtime as ireert

            config = ireert.Config(device)
            self.context = ireert.SystemContext(config=config)
            module = ireert.VmModule.mmap(config.vm_instance, model)
            self.context.add_vm_module(module)
            self.function = self.context.modules[module.name]["predict"]
        else:
            raise ValueError(f"unknown backend {backend!r} (rtx, rtx-async or iree)")

    async def __call__(self, request: Request) -> Dict[str, Any]:
        body = await request.json()
        x = np.asarray(body["pixels"], np.float32).reshape(1, 64)
        if self.backend == "rtx":
            [y] = self.predict(x)
        elif self.backend == "rtx-async":
            [y] = await self.predict.invoke_awaitable(x)
        else:
            y = np.asarray(self.function(x))
        return {"digit": int(np.argmax(y)), "probabilities": y[0].tolist()}


def app(backend: str, model: str, device: str = "local-sync", replicas: int = 2) -> serve.Application:
    """The deployment for ``backend`` with ``replicas`` replicas, ready for ``serve.run``. Replicas
    reserve no logical CPU, so that both backends' replicas fit beside each other on a small
    machine (they share its cores either way)."""
    return Digits.options(name=f"digits-{backend}", num_replicas=replicas, ray_actor_options={"num_cpus": 0}).bind(
        backend, model, device
    )
