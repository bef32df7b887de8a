"""An ONNX backend (``onnx.backend.base.Backend``) on rtx, like ``onnxruntime.backend``.

    import onnx, rtx.backend
    rep = rtx.backend.prepare(onnx.load("model.onnx"))
    outputs = rep.run([x])                      # numpy in, numpy out
    outputs = rtx.backend.run_node(node, [a, b])  # one operator

A model is serialized and loaded as an rtx module (imported in memory to a BEF kernel graph, as
``rtx.Module.load("model.onnx")`` does) into a context of its own, and its graph's function is
called with the inputs. A graph's sequence inputs and outputs are lists of arrays, its optional
ones ``None`` (empty) or their value. ``onnx.backend.test.BackendTest(rtx.backend, __name__)`` runs ONNX's
backend tests on it. Needs the ``onnx`` package (``pip install onnx``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import onnx
from onnx import helper
from onnx.backend.base import Backend as _OnnxBackend
from onnx.backend.base import BackendRep as _OnnxBackendRep

from .context import Context
from ._values import TensorSequence
from .module import Module

#: What the importer names the function of a graph without a name (as ``iree-import-onnx`` does).
UNNAMED_GRAPH = "main_graph"


class BackendRep(_OnnxBackendRep):
    """A prepared model: its module in a context, ready to run on inputs."""

    def __init__(self, model: onnx.ModelProto, work_queue: str = "s") -> None:
        graph = model.graph
        initializers = {tensor.name for tensor in graph.initializer}
        #: The graph inputs the caller supplies, in order (initializers are not among them).
        self.input_names: List[str] = [i.name for i in graph.input if i.name not in initializers]
        self.output_names: List[str] = [o.name for o in graph.output]
        self.function = graph.name or UNNAMED_GRAPH
        #: How each input is passed: as it is, or as a sequence (``None`` for an empty optional).
        self.input_kinds: List[str] = [
            _kind(i.type) for i in graph.input if i.name not in initializers
        ]
        #: Whether a sequence, an optional or a tensor of strings crosses the graph's boundary:
        #: such calls go through async values, which carry them.
        self.values = any(kind != "tensor" for kind in self.input_kinds) or any(
            _kind(o.type) != "tensor" for o in graph.output
        )
        self.module = Module.from_bytes(model.SerializeToString())
        self.context = Context(device=None, work_queue=work_queue)
        self.context.add_module(self.module)

    def run(self, inputs: Union[Sequence[Any], Dict[str, Any], Any], **kwargs: Any) -> Tuple[np.ndarray, ...]:
        """The outputs for ``inputs``: a sequence in the order of the graph's inputs, a dict by
        input name, or one array for a graph of one input."""
        if isinstance(inputs, dict):
            missing = [name for name in self.input_names if name not in inputs]
            if missing:
                raise ValueError(f"no value for the graph inputs {missing}")
            arguments = [inputs[name] for name in self.input_names]
        elif isinstance(inputs, (list, tuple)):
            arguments = list(inputs)
        else:
            arguments = [inputs]
        if not self.values:
            results = self.context.invoke(self.function, *arguments)
            return tuple(np.asarray(result) for result in results)
        arguments = [
            TensorSequence(value)
            if kind == "sequence" and value is not None
            else np.asarray(value, dtype=object) if kind == "strings" else value
            for kind, value in zip(self.input_kinds, arguments)
        ]
        results = self.context._invoke_with_values(self.context._plan(self.function), arguments)
        return tuple(result if result is None or isinstance(result, list) else np.asarray(result) for result in results)


def _kind(value_type: onnx.TypeProto) -> str:
    """``"tensor"``, ``"strings"`` (a tensor of strings), ``"sequence"``, or ``"optional"`` (of a
    tensor) for a graph input or output's type; an optional sequence is a sequence that may be
    ``None``."""
    which = value_type.WhichOneof("value")
    if which == "tensor_type" and value_type.tensor_type.elem_type == onnx.TensorProto.STRING:
        return "strings"
    if which == "optional_type":
        inner = value_type.optional_type.elem_type.WhichOneof("value")
        return "sequence" if inner == "sequence_type" else "optional"
    return "sequence" if which == "sequence_type" else "tensor"


class Backend(_OnnxBackend):
    """rtx as an ONNX backend: the CPU, through rtx's own kernels."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper() == "CPU"

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> BackendRep:
        super().prepare(model, device, **kwargs)
        if not cls.supports_device(device):
            raise ValueError(f"rtx.backend runs on the CPU, not on {device!r}")
        return BackendRep(model)

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> Tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Sequence[Any],
        device: str = "CPU",
        outputs_info: Optional[Sequence[Tuple[int, Sequence[int]]]] = None,
        **kwargs: Any,
    ) -> Tuple[np.ndarray, ...]:
        """Runs one operator: a model of just ``node``, its inputs typed from ``inputs`` (numpy
        arrays), its outputs from ``outputs_info`` (element type and shape) when given."""
        arrays = [np.asarray(value) for value in inputs]
        graph_inputs = [
            helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)
            for name, array in zip(node.input, arrays)
        ]
        name = f"{node.op_type.lower()}_node"
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        opsets = [helper.make_opsetid("", opset)]
        if outputs_info is None:
            # The outputs' types as ONNX infers them (the checker wants every output typed).
            probe = helper.make_model(helper.make_graph([node], name, graph_inputs, []), opset_imports=opsets)
            inferred = {info.name: info for info in onnx.shape_inference.infer_shapes(probe).graph.value_info}
            graph_outputs = [inferred.get(out) or helper.make_empty_tensor_value_info(out) for out in node.output]
        else:
            graph_outputs = [
                helper.make_tensor_value_info(out, elem_type, shape)
                for out, (elem_type, shape) in zip(node.output, outputs_info)
            ]
        model = helper.make_model(helper.make_graph([node], name, graph_inputs, graph_outputs), opset_imports=opsets)
        return cls.run_model(model, arrays, device, **kwargs)


prepare = Backend.prepare
run_model = Backend.run_model
run_node = Backend.run_node
supports_device = Backend.supports_device
