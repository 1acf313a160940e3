"""docker-compose.yml and the Dockerfile, checked without Docker: every RAG_RLM_* variable the
compose file sets is a real setting with a valid value, and the services the app needs are there
with healthchecks."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from rag_rlm.config import ENV_PREFIX, Settings

ROOT = Path(__file__).resolve().parent.parent
_DEFAULTED = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ${VAR:-default}, from `env` or the default."""
    return _DEFAULTED.sub(lambda m: env.get(m.group(1), m.group(2) or ""), str(value))


def app_env(compose: dict, shell: dict[str, str] | None = None) -> dict[str, str]:
    env = compose["services"]["app"]["environment"]
    return {k: interpolate(v, shell or {}) for k, v in env.items()}


def test_every_rag_rlm_variable_is_a_setting(compose):
    fields = {ENV_PREFIX + f.name.upper() for f in dataclasses.fields(Settings)}
    for name, service in compose["services"].items():
        env = service.get("environment") or {}
        keys = env if isinstance(env, dict) else [e.split("=", 1)[0] for e in env]
        unknown = {k for k in keys if k.startswith(ENV_PREFIX)} - fields
        assert not unknown, f"{name} sets {unknown}, which are not settings"
    assert len(app_env(compose)) >= 5


@pytest.mark.parametrize("shell", [{}, {"RAG_RLM_LLM": "openai+http://vllm:8000/v1", "VLLM_MODEL": "qwen",
                                       "RAG_RLM_API_KEYS": "k1=acme,k2=beta"}])
def test_the_apps_environment_builds_valid_settings(compose, shell):
    settings = Settings.from_env(environ=app_env(compose, shell))
    assert settings.host == "0.0.0.0" and settings.port == 8000
    host = re.match(r"postgresql://[^@]+@([^:/]+)", settings.store)
    assert host and host.group(1) in compose["services"], settings.store
    if shell:
        assert settings.llm == "openai+http://vllm:8000/v1" and settings.api_keys == {"k1": "acme", "k2": "beta"}
        assert "vllm" in compose["services"]


def test_the_services_the_app_needs_exist_with_healthchecks(compose):
    services = compose["services"]
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    assert services["qdrant"]["image"].startswith("qdrant/qdrant")
    for name in ("postgres", "qdrant", "app", "lb", "vllm"):
        assert services[name]["healthcheck"]["test"], name
    assert services["app"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "/health" in " ".join(services["app"]["healthcheck"]["test"])
    named = set(compose["volumes"])
    assert {v.split(":")[0] for v in services["postgres"]["volumes"]} <= named
    assert {v.split(":")[0] for v in services["qdrant"]["volumes"]} <= named


def test_the_app_scales_without_collisions(compose):
    app = compose["services"]["app"]
    assert "container_name" not in app and "ports" not in app  # --scale app=N needs both absent
    assert app["build"] == "." and "8000" in [str(p) for p in app["expose"]]
    lb = compose["services"]["lb"]
    conf = next(v.split(":")[0] for v in lb["volumes"] if "nginx" in v)
    text = (ROOT / conf).read_text()
    assert "http://app:8000" in text and "proxy_buffering off" in text  # SSE must not be buffered


def test_vllm_is_an_optional_profile_serving_mounted_models(compose):
    vllm = compose["services"]["vllm"]
    assert vllm["profiles"] == ["vllm"] and vllm["image"].startswith("vllm/vllm-openai")
    assert any(v.startswith("./models:") for v in vllm["volumes"])
    assert "profiles" not in compose["services"]["app"]


def test_dockerfile_installs_cpu_torch_first_and_serves():
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", text, re.M)
    torch = text.index("torch==2.13.0")
    assert "download.pytorch.org/whl/cpu" in text[torch:torch + 200]
    assert torch < text.index("pip install .")
    assert 'CMD ["rag-rlm", "serve", "--host", "0.0.0.0"]' in text
