"""`tape publish --push-to-hub REPO`: upload a written dataset folder to the Hugging Face Hub.

Optional on purpose: the folder is the contract (it is what `tape import DIR` reads back), and
the Hub client is a large dependency only publishers need (the `hub` extra). Without it the
command says how to get it instead of failing with an import error.
"""

from __future__ import annotations

from pathlib import Path

from groundhog.errors import LocalProblem


class HubUnavailable(LocalProblem, RuntimeError):
    """huggingface_hub is not installed, or the upload failed; the message says which."""

    title = "Hub unavailable"


def push_to_hub(folder: Path, repo: str, *, private: bool = False) -> str:
    """Create (if needed) the dataset repo `repo` and upload `folder` to it; its URL."""
    try:
        from huggingface_hub import HfApi
    except ImportError as error:
        raise HubUnavailable(
            "--push-to-hub needs huggingface_hub: pip install 'groundhog-rl[hub]' (the dataset "
            f"folder {folder} is written; upload it later with `huggingface-cli upload`)"
        ) from error
    api = HfApi()
    try:
        api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(folder_path=str(folder), repo_id=repo, repo_type="dataset")
    except Exception as error:  # the Hub client raises many kinds; all mean "not uploaded"
        raise HubUnavailable(f"uploading {folder} to {repo} failed: {error}") from error
    return f"https://huggingface.co/datasets/{repo}"
