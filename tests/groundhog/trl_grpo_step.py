"""One training step of TRL's real `GRPOTrainer` with Groundhog's rollout_func (run in .venv-trl).

tests/groundhog/test_trl_grpo.py starts the resolver, the proxy and the upstream, then runs
this program with the TRL venv's interpreter (torch is not in the dev venv: see
tests/support/trl_venv.py). Nothing comes from a hub: the model is a two-layer Llama built from
a config, the tokenizer a word-level one built from a vocabulary here, the dataset two prompts
in memory. Each rollout reads the world through the proxy on its branch, generates its
completion with the policy being trained, and scores it: the world's answer (the same for the
siblings of a group, so it cancels in TRL's group advantage) plus what the completion itself
earns. A second trainer's rollout returns no token ids and must be refused, inside TRL's step.

    python trl_grpo_step.py CONFIG.json RESULT.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import torch
from datasets import Dataset
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

from groundhog.client import Groundhog
from groundhog.trl_rollouts import RolloutOutputError, groundhog_rollout_func

NUM_GENERATIONS = 4
WORDS = ["a", "b", *(f"w{index}" for index in range(12))]
GOOD_WORD = "w3"  # the completion earns a point per occurrence: siblings differ, advantages too


def tokenizer() -> PreTrainedTokenizerFast:
    vocab = {token: index for index, token in enumerate(["<pad>", "<eos>", "<unk>", *WORDS])}
    model = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    model.pre_tokenizer = Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=model, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )


def policy(vocab_size: int, pad: int, eos: int) -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=pad,
        eos_token_id=eos,
        bos_token_id=eos,
    )
    return LlamaForCausalLM(config)


def trainer_for(rollout_func: Any, output_dir: str) -> GRPOTrainer:
    processing = tokenizer()
    model = policy(len(processing), processing.pad_token_id, processing.eos_token_id)
    args = GRPOConfig(
        output_dir=output_dir,
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=2 * NUM_GENERATIONS,  # two prompts per generation batch
        num_generations=NUM_GENERATIONS,
        max_completion_length=6,
        learning_rate=5e-2,
        max_steps=1,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=0,
    )

    def world_and_completion(
        completions: list[str], env_reward: list[float], **_: Any
    ) -> list[float]:
        return [
            world + completion.split().count(GOOD_WORD)
            for world, completion in zip(env_reward, completions, strict=True)
        ]

    return GRPOTrainer(
        model=model,
        reward_funcs=[world_and_completion],
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["a", "b"]}),
        processing_class=processing,
        rollout_func=rollout_func,
    )


def generate(trainer: GRPOTrainer, prompt: str) -> tuple[list[int], list[int], list[float]]:
    """One sampled completion of the policy being trained, with its tokens' log-probabilities."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    encoded = trainer.processing_class(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(
            **encoded,
            do_sample=True,
            max_new_tokens=trainer.args.max_completion_length,
            output_scores=True,
            return_dict_in_generate=True,
        )
        scores = model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)
    prompt_ids = encoded["input_ids"][0].tolist()
    completion_ids = out.sequences[0, len(prompt_ids) :].tolist()
    return prompt_ids, completion_ids, scores[0].tolist()


def main(config_path: str, result_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    upstream, tape = config["upstream"], config["tape"]
    seen_prompts: list[list[str]] = []

    async def rollout(prompt: str, trainer: Any, tools: httpx.AsyncClient) -> dict[str, Any]:
        url = f"{upstream}/{tape}/{prompt}"
        first = await tools.get(url)
        branch = first.request.headers["X-Groundhog-Branch"]
        if prompt == "b" and branch.endswith("/s0"):
            await tools.post(url, content=b"changed")  # one writer in the group of "b"
        second = await tools.get(url)
        prompt_ids, completion_ids, logprobs = generate(trainer, prompt)
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": logprobs,
            "env_reward": float(first.json()["serial"]),
            "decisions": [
                first.headers["X-Groundhog-Decision"],
                second.headers["X-Groundhog-Decision"],
            ],
        }

    result: dict[str, Any] = {}
    with Groundhog(config["resolver"], proxy_url=config["proxy"]) as gh:
        inner = groundhog_rollout_func(gh, tape, rollout)

        def rollout_func(prompts: list[str], trainer: Any) -> dict[str, list[Any]]:
            seen_prompts.append(list(prompts))
            output = inner(prompts, trainer)
            result["rollout"] = {
                key: output[key]
                for key in ("groundhog_branch", "env_reward", "decisions", "completion_ids")
            }
            return output

        with tempfile.TemporaryDirectory() as output_dir:
            trainer = trainer_for(rollout_func, output_dir)
            before = [p.detach().clone() for p in trainer.model.parameters()]
            trainer.train()
            after = list(trainer.model.parameters())
            result["global_step"] = trainer.state.global_step
            result["changed_parameters"] = sum(
                not torch.equal(old, new.detach()) for old, new in zip(before, after, strict=True)
            )
            result["parameters"] = len(before)
            result["seen_prompts"] = seen_prompts
            result["log_history"] = trainer.state.log_history

            async def tokenless(prompt: str, trainer: Any, tools: httpx.AsyncClient) -> Any:
                return {"env_reward": 1.0}

            refusing = trainer_for(groundhog_rollout_func(gh, f"{tape}-r", tokenless), output_dir)
            try:
                refusing.train()
            except RolloutOutputError as refused:
                result["refused"] = str(refused)

    Path(result_path).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
