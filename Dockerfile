# Tarn in a container: the web server, workers and beat all run from this image (see docker-compose.yml).
# Containers reach the NAS over the SSH transport, so none of them needs privileges.
FROM node:20-bookworm-slim AS static
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM python:3.13-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends openssh-client && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
COPY --from=static /src/node_modules ./node_modules
ENV DJANGO_SETTINGS_MODULE=tarn.settings TARN_DATA_DIR=/data TARN_LOCAL_READ_ONLY=true
VOLUME /data
EXPOSE 8000
