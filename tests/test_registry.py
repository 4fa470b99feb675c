"""Backend selection by name (mjvec.backends.registry): errors name the value, the allowed set and the fix."""

from __future__ import annotations

import pytest

from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.backends.registry import (
    BACKENDS,
    BackendRequest,
    backend_entry,
    backend_status,
    make_backend,
    native_namespace,
)
from mjvec.errors import ConfigError
from tests.scenes import make_scene


def _scene() -> Scene:
    return Scene(num_variants=2, make_variant=make_scene, num_envs=2)


def test_make_backend_builds_the_named_backend_with_its_options() -> None:
    be = make_backend("cpu", _scene(), num_threads=1, progress=False)
    assert isinstance(be, CpuBackend) and be.num_threads == 1
    assert native_namespace(be) == "numpy" and be.capabilities.array_namespace == "numpy"
    be.close()
    assert backend_status()["cpu"] == "available" and set(backend_status()) == set(BACKENDS)


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        ("tpu", {}, r"backend='tpu' is not supported; allowed values are \{cpu, warp\}"),
        (None, {}, r"backend=None is not supported"),
        ("warp", {"num_threads": 2}, r"num_threads applies to threaded backends \('cpu'\); drop it for backend='warp'"),
        ("cpu", {"device": "cuda:0"}, r"backend='cpu' keeps its state on the host and takes no device \(got "
                                      r"device='cuda:0'\); device backends are 'warp'"),
        ("cpu", {"state_namespace": "jax"}, r"state_namespace must be None or 'numpy', got 'jax'"),
    ],
)
def test_make_backend_refuses_what_a_backend_does_not_take(name, kwargs, match) -> None:
    with pytest.raises(ConfigError, match=match):
        make_backend(name, _scene(), progress=False, **kwargs)


def test_backend_entry_lookup() -> None:
    assert backend_entry("cpu").threads and backend_entry("warp").default_device == "cuda:0"
    with pytest.raises(ConfigError, match=r"backend=3 is not supported"):
        backend_entry(3)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"name": "cpu", "num_threads": 0}, r"num_threads must be an int >= 1 or None, got 0"),
    ({"name": "warp", "nconmax": 2.5}, r"nconmax must be an int >= 1 or None, got 2.5"),
    ({"name": "cpu", "device": "cuda:0"}, r"backend='cpu' keeps its state on the host and takes no device"),
    ({"name": "cpu", "deterministic": "yes"}, r"deterministic"),
    ({"name": "gpu"}, r"backend='gpu' is not supported; allowed values are \{cpu, warp\}"),
])
def test_a_backend_request_is_checked_once_when_made(kwargs, match) -> None:
    with pytest.raises(ConfigError, match=match):
        BackendRequest(**kwargs)


def test_a_backend_request_builds_what_it_estimated() -> None:
    request = BackendRequest("cpu", num_threads=1)
    assert request.resolved_device is None and BackendRequest("warp").resolved_device == "cuda:0"
    scene = _scene()
    model = scene.compile_variant(0)[1]
    assert sum(request.estimate_memory(model).host.values()) > 0
    backend = request.build(scene, progress=False)
    try:
        assert isinstance(backend, CpuBackend) and backend.num_threads == 1
    finally:
        backend.close()
