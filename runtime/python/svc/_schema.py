"""The `Endpoint(...)` argument rules. GENERATED from core/endpoint-schema.ts by
scripts/generate-endpoint-schema.ts: do not edit, change the schema and run the script.
"""
from enum import Enum

ENDPOINT_ARGUMENTS = ("name", "gpu", "cpu", "gpu_count", "workers", "idle_timeout", "scaler_type", "scaler_value", "execution_timeout", "env", "dependencies", "flashboot", "volume", "schedule", "batch", "retries", "network", "concurrency")
GPU_GROUPS = ("AMPERE_16", "AMPERE_24", "ADA_24", "AMPERE_48", "ADA_48_PRO", "AMPERE_80", "ADA_80_PRO")
SCALER_TYPES = ("QUEUE_DELAY", "REQUEST_COUNT")
HTTP_METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")
RESERVED_PATHS = ("/ping", "/execute")

NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_-]*$"
GPU_TYPES = {"min": 1, "max": 3}
GPU_COUNT = {"min": 1, "max": 8}
CPU_FLAVOUR_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]*$"
CPU_FLAVOURS = {"min": 1, "max": 10}
WORKERS = {"min": 0, "max": 100}
IDLE_TIMEOUT_S = {"min": 0, "max": 86400}
SCALER_VALUE = {"min": 0, "max": 10000}
EXECUTION_TIMEOUT_S = {"min": 5, "max": 604800}
ENV_NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"
ENV_VARS = {"max": 500, "nameLength": 256, "valueLength": 65536}
VOLUME_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
BATCH_SIZE = {"min": 1, "max": 64}
BATCH_WAIT_MS = {"min": 0, "max": 10000}
MAX_RETRIES = {"min": 0, "max": 10}
RETRY_BACKOFF = {"min": 1, "max": 10}
RETRY_INITIAL_DELAY_S = {"min": 0, "max": 3600}
CONCURRENCY = {"min": 1, "max": 256}

DEFAULT_CPU = "cpu3c-2-4"
DEFAULT_GPU_COUNT = 1
DEFAULT_WORKERS = (0, 3)
DEFAULT_IDLE_TIMEOUT_S = 5
DEFAULT_SCALER_TYPE = {"QB": "QUEUE_DELAY", "LB": "REQUEST_COUNT"}
DEFAULT_SCALER_VALUE = 4
DEFAULT_EXECUTION_TIMEOUT_S = 600
DEFAULT_FLASHBOOT = True
DEFAULT_SCHEDULE_TIME_ZONE = "UTC"
DEFAULT_BATCH_MAX_WAIT_MS = 10
DEFAULT_RETRY_BACKOFF = 2
DEFAULT_RETRY_INITIAL_DELAY_S = 1
DEFAULT_NETWORK = True

# One message per rule; {got} is the value given.
MESSAGES = {
    "unknown": "unknown argument {got}; Endpoint(...) takes name, gpu, cpu, gpu_count, workers, idle_timeout, scaler_type, scaler_value, execution_timeout, env, dependencies, flashboot, volume, schedule, batch, retries, network, concurrency",
    "nameMissing": "name is required (Endpoint(name=\"my-endpoint\", ...))",
    "name": "name must be a string of letters, digits, '-' and '_' starting with a letter or digit, got {got}",
    "gpuAndCpu": "give either gpu= or cpu=, not both",
    "gpuTypes": "gpu takes one GpuGroup or a list of 1 to 3, got {got}",
    "gpu": "invalid GPU id {got}; valid GpuGroup members: AMPERE_16, AMPERE_24, ADA_24, AMPERE_48, ADA_48_PRO, AMPERE_80, ADA_80_PRO",
    "gpuTwice": "gpu lists the same GpuGroup twice",
    "gpuCount": "gpu_count must be an integer from 1 to 8, got {got}",
    "gpuCountWithoutGpu": "gpu_count needs gpu=",
    "cpuFlavours": "cpu takes a CPU flavour (\"cpu3c-2-4\") or a list of 1 to 10 of them, got {got}",
    "cpu": "invalid CPU flavour {got}; use a name like \"cpu3c-2-4\"",
    "workers": "workers must be an integer max or a (min, max) pair of integers, got {got}",
    "workersRange": "workers (min, max) needs 0 <= min <= max <= 100, got {got}",
    "idleTimeout": "idle_timeout must be a whole number of seconds from 0 to 86400, got {got}",
    "scalerType": "scaler_type must be one of QUEUE_DELAY, REQUEST_COUNT, got {got}",
    "scalerValue": "scaler_value must be an integer from 0 to 10000, got {got}",
    "executionTimeout": "execution_timeout must be a number of seconds from 5 to 604800 (7 days), got {got}",
    "env": "env must be a dict of at most 500 str names to str values, got {got}",
    "envName": "env name {got} is not a valid environment variable name (letters, digits, '_', at most 256 characters)",
    "envValue": "env value of {got} must be a string of at most 65536 characters",
    "dependencies": "dependencies must be a list of requirement strings (\"pillow>=10\"), got {got}",
    "flashboot": "flashboot must be True or False, got {got}",
    "volume": "volume must be the name of a network volume (1-64 letters, digits, '.', '_' or '-'; svc volume list), got {got}",
    "schedule": "schedule must be a cron string (\"0 3 * * *\") or Cron(\"0 3 * * *\", timezone=\"Europe/Paris\", input={...}), got {got}",
    "scheduleCron": "the cron expression {got} of schedule is invalid: {why}",
    "scheduleTimeZone": "schedule timezone {got} is not an IANA time zone name (\"UTC\", \"Europe/Paris\")",
    "scheduleInput": "schedule input must be a dict of the function's keyword arguments, got {got}",
    "batch": "batch must be Batch(max_size=16, max_wait_ms=50), got {got}",
    "batchSize": "batch max_size must be an integer from 1 to 64, got {got}",
    "batchWait": "batch max_wait_ms must be a number of milliseconds from 0 to 10000, got {got}",
    "concurrency": "concurrency must be an integer from 1 to 256 (jobs one worker runs at once), got {got}",
    "concurrencyWithBatch": "concurrency does not apply to a batched endpoint (its worker runs one batch at a time): give batch= or concurrency=",
    "queueBasedOnly": "only a queue-based endpoint (one @Endpoint function) takes {got}, not one with load-balanced routes",
    "retries": "retries must be an integer from 0 to 10 or Retries(max_retries=0..10, backoff=1..10, initial_delay=0..3600 seconds), got {got}",
    "network": "network must be True (egress: the endpoint's workers may open outside connections) or False (none), got {got}",
}


class GpuGroup(str, Enum):
    """A GPU tier. The value is the member name, so `GpuGroup.ADA_24 == "ADA_24"`."""

    AMPERE_16 = "AMPERE_16"
    AMPERE_24 = "AMPERE_24"
    ADA_24 = "ADA_24"
    AMPERE_48 = "AMPERE_48"
    ADA_48_PRO = "ADA_48_PRO"
    AMPERE_80 = "AMPERE_80"
    ADA_80_PRO = "ADA_80_PRO"

    def __str__(self) -> str:  # str(GpuGroup.ADA_24) == "ADA_24", not "GpuGroup.ADA_24"
        return self.value
