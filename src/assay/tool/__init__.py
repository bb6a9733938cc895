"""Verified tools: any Python callable, sync or async, whose every call assay verifies."""

from assay.tool.decorator import verified as verified
from assay.tool.result import Verification as Verification
from assay.tool.result import Verified as Verified
