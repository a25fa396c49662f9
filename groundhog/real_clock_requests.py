"""The requests twin of `groundhog.real_clock`, in its own module so requests loads on use."""

from __future__ import annotations

from typing import Any

import requests
import requests.adapters

from groundhog.shim import outside_branch


class _RealClockAdapter(requests.adapters.HTTPAdapter):
    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        with outside_branch():
            return super().send(request, *args, **kwargs)
