"""svc: declare serverless endpoints with `@Endpoint(...)`; this package also runs inside every worker."""
from .endpoint import Endpoint
from .errors import InputValidationError, RemoteCallError
from .files import save_output_file
from .gpu import GpuGroup
from .options import Batch, Cron, Retries

__version__ = "0.1.0"

__all__ = ["Batch", "Cron", "Endpoint", "GpuGroup", "InputValidationError", "RemoteCallError", "Retries", "save_output_file", "__version__"]
