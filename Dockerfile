# The rag-rlm app: stateless (vectors, memo cache, traces and jobs live in PostgreSQL), so
# `docker compose up --scale app=N` runs N of these behind the load balancer.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    RAG_RLM_DATA_DIR=/data

WORKDIR /app

# scanned PDF pages are read by tesseract (rag_rlm/ingest/ocr.py); without it they fail to ingest
RUN apt-get update \
    && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng \
    && rm -rf /var/lib/apt/lists/*

# torch first, CPU build from the PyTorch index: otherwise pip pulls a multi-GB CUDA build
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu

COPY pyproject.toml README.md ./
COPY rag_rlm ./rag_rlm
COPY ingest ./ingest
COPY migrations ./migrations
# the trained reader (rag_rlm.reader.shipped_reader_path finds it as ./models/reader)
COPY models/reader ./models/reader
RUN pip install . \
    && useradd --system --uid 10001 --home-dir /data rag \
    && mkdir -p /data /app/models \
    && chown rag /data

USER rag
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"
CMD ["rag-rlm", "serve", "--host", "0.0.0.0"]
