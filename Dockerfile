# One scope-envs id served over OpenEnv's protocol (docs/serving.md):
#   docker build -t scope-envs .
#   docker run -p 8000:8000 -e SCOPE_ENV_ID=p4g-cotrain scope-envs
# SCOPE_ENV_SURFACE (act | text) and SCOPE_ENV_KWARGS (a JSON object of make() arguments) configure it.
# torch goes in first, from TORCH_INDEX_URL when given (a CPU-only index keeps the image small).
FROM python:3.11-slim
ARG TORCH_INDEX_URL=
WORKDIR /app
RUN if [ -n "$TORCH_INDEX_URL" ]; then pip install --no-cache-dir torch==2.13.0 --index-url "$TORCH_INDEX_URL"; \
    else pip install --no-cache-dir torch==2.13.0; fi
COPY pyproject.toml setup.py README.md ./
COPY scope_envs ./scope_envs
COPY agents ./agents
COPY wrappers ./wrappers
RUN pip install --no-cache-dir ".[serve,fast]"
ENV SCOPE_ENV_ID=p4g-frozen SCOPE_ENV_SURFACE=act SCOPE_ENV_KWARGS={}
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"
# the protocol that closes a connection whose headers do not arrive in 30 s (scope_envs/serve/protocol.py)
CMD ["sh", "-c", "uvicorn scope_envs.serve.asgi:app --http scope_envs.serve.protocol:HeaderTimeoutProtocol --host 0.0.0.0 --port 8000 --log-level warning"]
