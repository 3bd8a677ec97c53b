"""The Endpoint decorator: metadata, wrapper kinds, local calls and argument validation."""
import asyncio
import inspect

import pytest

import svc
from svc import Endpoint, GpuGroup
from svc.endpoint import registry


@pytest.fixture(autouse=True)
def outside_worker(monkeypatch):
    monkeypatch.delenv("SVC_ENDPOINT_NAME", raising=False)


def test_exports():
    assert set(svc.__all__) >= {"Endpoint", "GpuGroup", "save_output_file", "RemoteCallError",
                                "InputValidationError", "__version__"}
    assert issubclass(svc.InputValidationError, ValueError)
    assert isinstance(svc.__version__, str)


def test_gpu_group_values_are_member_names():
    assert [g.value for g in GpuGroup] == ["AMPERE_16", "AMPERE_24", "ADA_24", "AMPERE_48",
                                           "ADA_48_PRO", "AMPERE_80", "ADA_80_PRO"]
    assert GpuGroup.ADA_24 == "ADA_24" and str(GpuGroup.ADA_24) == "ADA_24"


def test_queue_function_keeps_metadata_and_runs_locally():
    @Endpoint(name="meta-sync", gpu=GpuGroup.ADA_24)
    def process(prompt: str, steps: int = 30) -> dict:
        """Make a picture."""
        return {"prompt": prompt, "steps": steps}

    assert process.__name__ == "process" and process.__doc__ == "Make a picture."
    assert process.endpoint_name == "meta-sync"
    assert inspect.signature(process) == inspect.signature(process.__wrapped__)
    assert process("cat", steps=2) == {"prompt": "cat", "steps": 2}
    assert registry["meta-sync"].function is process.__wrapped__
    assert registry["meta-sync"].config.gpu_ids == ["ADA_24"]


def test_async_and_generator_functions_keep_their_kind():
    @Endpoint(name="meta-async")
    async def a(x: int) -> int:
        return x + 1

    @Endpoint(name="meta-gen")
    def g(n: int):
        yield from range(n)

    @Endpoint(name="meta-agen")
    async def ag(n: int):
        for i in range(n):
            yield i

    async def collect():
        return [i async for i in ag(3)]

    assert inspect.iscoroutinefunction(a) and asyncio.run(a(1)) == 2
    assert inspect.isgeneratorfunction(g) and list(g(3)) == [0, 1, 2]
    assert inspect.isasyncgenfunction(ag) and asyncio.run(collect()) == [0, 1, 2]


def test_function_of_own_endpoint_runs_locally_inside_its_worker(monkeypatch):
    monkeypatch.setenv("SVC_ENDPOINT_NAME", "own")

    @Endpoint(name="own")
    def f(x: int) -> int:
        return x * 2

    assert f(4) == 8


def test_routes_are_registered_with_metadata():
    api = Endpoint(name="meta-api", cpu="cpu3c-2-4")

    @api.post("/generate")
    def generate(text: str) -> dict:
        return {"text": text}

    @api.get("/items")
    async def items() -> list:
        return []

    assert generate.http_method == "POST" and generate.http_path == "/generate"
    assert generate("x") == {"text": "x"} and inspect.iscoroutinefunction(items)
    assert set(api.routes) == {("POST", "/generate"), ("GET", "/items")}
    assert api.type == "LB"


@pytest.mark.parametrize("path", ["/ping", "/execute", "/ping/"])
def test_reserved_paths_are_refused(path):
    api = Endpoint(name="reserved")
    with pytest.raises(ValueError, match="reserved"):
        api.get(path)


def test_duplicate_route_is_refused():
    api = Endpoint(name="dup")

    @api.post("/x")
    def one() -> None: ...

    with pytest.raises(ValueError, match=r"POST /x is already handled by one\(\)"):
        @api.post("/x")
        def two() -> None: ...

    @api.get("/x")  # another method on the same path is fine
    def three() -> None: ...


def test_queue_endpoint_takes_one_function_and_no_routes():
    ep = Endpoint(name="single")

    @ep
    def first() -> None: ...

    with pytest.raises(ValueError, match="one function"):
        @ep
        def second() -> None: ...
    with pytest.raises(ValueError, match="queue-based"):
        ep.post("/x")(lambda: None)


@pytest.mark.parametrize("kwargs, message", [
    ({"gpu": "H100"}, "invalid GPU id 'H100'"),
    ({"gpu": ["ADA_24"] * 1 + ["AMPERE_16", "AMPERE_24", "AMPERE_48"]}, "1 to 3"),
    ({"gpu": ["ADA_24", GpuGroup.ADA_24]}, "twice"),
    ({"gpu": "ADA_24", "cpu": "cpu3c-2-4"}, "not both"),
    ({"cpu": ""}, "CPU flavour"),
    ({"workers": (3, 1)}, "min <= max"),
    ({"workers": "many"}, r"\(min, max\)"),
    ({"gpu_count": 0}, "gpu_count"),
    ({"scaler_type": "CPU"}, "QUEUE_DELAY, REQUEST_COUNT"),
    ({"execution_timeout": 0}, "execution_timeout"),
    # the bounds of the one Endpoint schema (core/endpoint-schema.ts), as the build and platform check them
    ({"execution_timeout": 2}, r"execution_timeout must be a number of seconds from 5 to 604800 \(7 days\), got 2"),
    ({"execution_timeout": 1000000}, "from 5 to 604800"),
    ({"workers": (0, 101)}, "<= 100"),
    ({"gpu": "ADA_24", "gpu_count": 9}, "from 1 to 8"),
    ({"gpu_count": 2}, "gpu_count needs gpu="),
    ({"idle_timeout": 2.5}, "whole number of seconds"),
    ({"scaler_value": 1.5}, "scaler_value must be an integer"),
    ({"env": {"1BAD": "x"}}, "env name '1BAD'"),
    ({"idle_timeout": -1}, "idle_timeout"),
    ({"env": {"A": 1}}, "env"),
    ({"dependencies": "pillow"}, "dependencies"),
    ({"flashboot": "yes"}, "flashboot"),
    ({"volume": "../weights"}, "volume"),
    ({"volume": 3}, "volume"),
    ({"volume": "weights\n"}, "volume"),
    ({"network": "off"}, "network must be True"),
])
def test_bad_arguments_are_refused_with_a_clear_message(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Endpoint(name="bad", **kwargs)


@pytest.mark.parametrize("name", ["", "has space", "-lead", "a/b", 3])
def test_bad_names_are_refused(name):
    with pytest.raises(ValueError, match="letters, digits"):
        Endpoint(name=name)


def test_defaults_and_normalisation():
    cfg = Endpoint(name="defaults").config
    assert cfg.cpu_ids == ["cpu3c-2-4"] and cfg.gpu_ids is None
    assert (cfg.workers_min, cfg.workers_max, cfg.idle_timeout, cfg.execution_timeout) == (0, 3, 5, 600)
    assert (cfg.scaler_type, cfg.scaler_value, cfg.flashboot) == (None, 4, True)  # None: by kind
    assert cfg.volume is None
    assert Endpoint(name="with-volume", volume="wan-weights").config.volume == "wan-weights"
    assert cfg.network is True and Endpoint(name="offline", network=False).config.network is False
    cfg = Endpoint(name="gpus", gpu=[GpuGroup.ADA_24, "AMPERE_48"], workers=5).config
    assert cfg.gpu_ids == ["ADA_24", "AMPERE_48"] and cfg.cpu_ids is None
    assert (cfg.workers_min, cfg.workers_max) == (0, 5)
