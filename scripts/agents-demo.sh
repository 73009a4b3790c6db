#!/usr/bin/env bash
# Runs the real Claude Code and Codex CLIs (from npm, into a temporary directory) through
# Switchyard in front of emulated providers, with no real network: each CLI, same-dialect and
# cross-dialect, streamed, with one tool call (the emulated model calls the agent's first tool,
# the agent runs it and sends the result back, the model then answers with text).
# docs/agents.md explains the settings used here.
#
#   scripts/agents-demo.sh            # uses ./switchyard, or builds it
# Needs: node/npm (to fetch the CLIs), curl, go (when ./switchyard is missing). Linux x86_64 or
# arm64 (the CLIs' native packages).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
bin="$here/switchyard"
[ -x "$bin" ] || { go build -o "$tmp/switchyard" "$here/cmd/switchyard"; bin="$tmp/switchyard"; }
arch=$(uname -m); case "$arch" in x86_64) np=x64 ;; aarch64|arm64) np=arm64 ;; *) echo "unsupported $arch"; exit 1 ;; esac

claude=${CLAUDE_BIN:-} codex=${CODEX_BIN:-} # set both to skip the download
mkdir -p "$tmp/home" "$tmp/codex" "$tmp/work"
if [ -z "$claude" ] || [ -z "$codex" ]; then
  echo "fetching the CLIs from npm..."
  (cd "$tmp" && npm pack --silent "@anthropic-ai/claude-code-linux-$np" \
    "@openai/codex@$(npm view @openai/codex version)-linux-$np" >/dev/null)
  mkdir -p "$tmp/cc" "$tmp/cx"
  tar xzf "$tmp"/anthropic-ai-claude-code-linux-*.tgz -C "$tmp/cc"
  tar xzf "$tmp"/openai-codex-*.tgz -C "$tmp/cx"
  claude=$(find "$tmp/cc" -type f -name claude | head -1)
  codex=$(find "$tmp/cx" -type f -path '*/bin/codex' | head -1)
fi

# Two emulated providers with their control API, and the gateway in front of them.
"$bin" fake-provider --addr 127.0.0.1:18101 --dialect openai >"$tmp/oa.log" 2>&1 &
"$bin" fake-provider --addr 127.0.0.1:18102 --dialect anthropic >"$tmp/an.log" 2>&1 &
cat >"$tmp/switchyard.yaml" <<YAML
server: {listen: 127.0.0.1:18100}
store: {url: "sqlite://$tmp/sy.db"}
auth: {required: false}
models:
  - {id: gpt-5-codex, context_window: 400000, max_output_tokens: 32000}
  - {id: claude-sonnet-4-5, context_window: 200000, max_output_tokens: 32000}
deployments:
  - {name: openai, provider: openai, dialect: openai, base_url: "http://127.0.0.1:18101/v1", api_key: demo,
     responses: true, routes: [{model: gpt-5-codex, price: {input: 1.25, output: 10}}]}
  - {name: anthropic, provider: anthropic, dialect: anthropic, base_url: "http://127.0.0.1:18102", api_key: demo,
     routes: [{model: claude-sonnet-4-5, price: {input: 3, output: 15}}]}
YAML
"$bin" serve --config "$tmp/switchyard.yaml" >"$tmp/sy.log" 2>&1 &
for _ in $(seq 50); do curl -sf http://127.0.0.1:18100/healthz >/dev/null && break; sleep 0.2; done

# The next answer of both providers calls the agent's first tool; the one after it is text.
script() { for p in 18101 18102; do curl -sf "127.0.0.1:$p/_fake/script" -d '{"replace":true,"behaviors":[{"tool_call":true},{"text":"Done: the tool ran."}]}' >/dev/null; done; }

run_claude() { # model
  script
  (cd "$tmp/work" && HOME="$tmp/home" ANTHROPIC_BASE_URL=http://127.0.0.1:18100 ANTHROPIC_API_KEY=demo \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 timeout 120 "$claude" -p "list the files here" --model "$1" 2>&1 | tail -2) || true
}
run_codex() { # model
  script
  (cd "$tmp/work" && CODEX_HOME="$tmp/codex" SY_KEY=demo timeout 120 "$codex" exec --skip-git-repo-check \
    -c model_provider=switchyard \
    -c 'model_providers.switchyard={name="Switchyard",base_url="http://127.0.0.1:18100/v1",wire_api="responses",env_key="SY_KEY"}' \
    -m "$1" "list the files here" 2>&1 | grep -v '^warning' | tail -2) || true
}
echo "== Claude Code, same dialect (claude-sonnet-4-5 on the Anthropic deployment)"; run_claude claude-sonnet-4-5
echo "== Claude Code, cross-dialect (gpt-5-codex on the OpenAI deployment)";       run_claude gpt-5-codex
echo "== Codex, Responses pass-through (gpt-5-codex, responses: true)";             run_codex gpt-5-codex
echo "== Codex, cross-dialect (claude-sonnet-4-5 on the Anthropic deployment)";    run_codex claude-sonnet-4-5
echo "== what the providers received"
for p in 18101 18102; do curl -s "127.0.0.1:$p/_fake/requests" | python3 -c 'import json,sys; [print(" ", r.get("path"), r.get("model"), "stream" if r.get("stream") else "", r.get("rejected") or "accepted") for r in json.load(sys.stdin)["requests"]]' 2>/dev/null || true; done
