#!/usr/bin/env bash
# The command line as a person uses it, on the bundled model: each check runs
# a real command and looks at its output and exit status.
# Usage: tests/cli/test_cli.sh build/hearth
set -u
hearth=${1:-build/hearth}
passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
contains() { grep -qF -- "$2" "$1"; }
# Exit status of a failing command: 1 or 2 (a clean error), not a signal.
clean_error() { local rc=$1; [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ]; }

"$hearth" generate --max-tokens 40 >"$tmp/story" 2>"$tmp/err"
check "generate: the bundled model tells its story from BOS" \
  contains "$tmp/story" "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
check "generate: a summary line on stderr" contains "$tmp/err" "finish: length"

"$hearth" generate --prompt "Once upon a time" --max-tokens 12 >"$tmp/cont" 2>/dev/null
check "generate --prompt continues the prompt" contains "$tmp/cont" ", there was a little girl named Lily"

"$hearth" generate --prompt "Once upon a time" --max-tokens 30 --temperature 1 --seed 42 >"$tmp/s1" 2>/dev/null
"$hearth" generate --prompt "Once upon a time" --max-tokens 30 --temperature 1 --seed 42 >"$tmp/s2" 2>/dev/null
check "generate: the same seed gives the same text" cmp -s "$tmp/s1" "$tmp/s2"
# Any 64-bit seed, as the server's `seed` takes it: -1 is 2^64 - 1.
"$hearth" generate --prompt "Once upon a time" --max-tokens 30 --temperature 1 --seed -1 >"$tmp/s3" 2>/dev/null
"$hearth" generate --prompt "Once upon a time" --max-tokens 30 --temperature 1 --seed 18446744073709551615 >"$tmp/s4" 2>/dev/null
check "generate: --seed takes 64-bit seeds, -1 the same as 2^64 - 1" cmp -s "$tmp/s3" "$tmp/s4"
check "generate: another seed gives another text" bash -c '! cmp -s "$1" "$2"' _ "$tmp/s1" "$tmp/s3"
"$hearth" generate --max-tokens 1 --seed 18446744073709551616 >/dev/null 2>"$tmp/seed.err"
rc=$?
check "generate: a seed past 64 bits is a clean error" clean_error "$rc"
check "generate: ... saying so" contains "$tmp/seed.err" "out of range"

"$hearth" generate --prompt "Once upon a time" --max-tokens 40 --ctx-size 12 >/dev/null 2>"$tmp/ctx"
check "generate --ctx-size: prompt + output stop at the context size" \
  contains "$tmp/ctx" "5 prompt tokens, " && contains "$tmp/ctx" "7 generated" && contains "$tmp/ctx" "finish: length"

"$hearth" generate --chat --prompt "Tell me a story" --max-tokens 20 >"$tmp/chat1" 2>/dev/null
check "generate --chat renders the template and answers" test -s "$tmp/chat1"

printf 'Tell me about a cat\n/reset\nAnd a dog\n/exit\n' | "$hearth" chat --max-tokens 15 >"$tmp/chat2" 2>"$tmp/chat2.err"
rc=$?
check "chat: exits 0 at /exit" test "$rc" -eq 0
check "chat: one reply line per message" test "$(grep -c . "$tmp/chat2")" -eq 2
# The second turn reuses the first from the prompt cache: its prompt, reply included.
printf 'Tell me a story about a little dog who wanted to fly.\nWhat happened next?\n' |
  "$hearth" chat --system "You are a kind storyteller for small children." --max-tokens 40 --stats >/dev/null 2>"$tmp/chat3.err"
cached2=$(grep -o 'prompt [0-9]* tokens, [0-9]* cached' "$tmp/chat3.err" | sed -n 2p | awk '{print $4}')
prompt1=$(grep -o 'prompt [0-9]* tokens' "$tmp/chat3.err" | sed -n 1p | awk '{print $2}')
check "chat: the second turn reuses the first from the cache" test "${cached2:-0}" -ge $(( prompt1 / 32 * 32 )) -a "${cached2:-0}" -gt 0

"$hearth" generate --model "$tmp/nope" >/dev/null 2>"$tmp/e1"; rc=$?
check "generate: a missing model directory is a clean error" clean_error $rc
check "generate: ... naming the directory" contains "$tmp/e1" "$tmp/nope"

"$hearth" generate --max-tokenz 5 >/dev/null 2>"$tmp/e2"; rc=$?
check "generate: an unknown option is refused" clean_error $rc
check "generate: ... by name" contains "$tmp/e2" "--max-tokenz"

"$hearth" generate --temperature hot >/dev/null 2>"$tmp/e3"; rc=$?
check "generate: a malformed number is refused" clean_error $rc

# Words that are no options were ignored: a prompt given without --prompt
# generated from BOS, "-port 9000" served on 8080.
"$hearth" generate "Once upon a time" >/dev/null 2>"$tmp/e6"; rc=$?
check "generate: a word that is no option is refused" clean_error $rc
check "generate: ... naming it" contains "$tmp/e6" "unexpected argument 'Once upon a time'"
timeout 30 "$hearth" serve -port 9000 >/dev/null 2>"$tmp/e7"; rc=$?
check "serve: -port (one dash) is refused before serving" clean_error $rc
"$hearth" generate --prompt-ids 1 --logits -1 >/dev/null 2>"$tmp/e8"; rc=$?
check "generate: a negative --logits is refused" clean_error $rc
check "generate: ... by name" contains "$tmp/e8" "--logits"
"$hearth" bench --prefill 0 --decode 8 --repeats 1 >/dev/null 2>"$tmp/e9"; rc=$?
check "bench: a prompt length of 0 is refused" clean_error $rc
check "bench: ... by name" contains "$tmp/e9" "--prefill"
# Sizes and counts are checked in range before any cast: a negative
# --max-body was SIZE_MAX, and --repeats 2^32+1 was one repeat.
timeout 30 "$hearth" serve --max-body -1 --port 0 >/dev/null 2>"$tmp/e11"; rc=$?
check "serve: a negative --max-body is refused" clean_error $rc
check "serve: ... naming the least" contains "$tmp/e11" "option --max-body must be at least 1024, got '-1'"
"$hearth" bench --repeats 4294967297 >/dev/null 2>"$tmp/e12"; rc=$?
check "bench: a --repeats past int is refused" clean_error $rc
check "bench: ... naming the range" contains "$tmp/e12" "--repeats must be in [1, 2147483647]"
timeout 30 "$hearth" serve --max-header-bytes 99999999999999999999 --port 0 >/dev/null 2>"$tmp/e13"; rc=$?
check "serve: a number past 64 bits is refused" clean_error $rc
check "serve: ... as out of range" contains "$tmp/e13" "is out of range"
# A huge or infinite number of GB or seconds would overflow the byte or
# nanosecond counts it turns into.
for opt in "--ssd-demote-idle inf" "--ssd-spill-queue 1e300" "--kv-budget nan"; do
  timeout 30 "$hearth" serve --ssd-cache "$tmp/ssd-refused" $opt --port 0 >/dev/null 2>"$tmp/e14"; rc=$?
  check "serve: $opt is refused" clean_error $rc
  check "serve: ... naming the range" contains "$tmp/e14" "must be between -1e9 and 1e9"
done
"$hearth" generate --prompt-ids 1 --max-tokens 1 --kv-type int4 >/dev/null 2>"$tmp/e15"; rc=$?
check "generate: an unknown --kv-type is refused" clean_error $rc
check "generate: ... naming the types" contains "$tmp/e15" "--kv-type must be auto, f32, bf16 or int8, not 'int4'"
echo hello | "$hearth" chat --max-tokens 0 >/dev/null 2>"$tmp/e16"; rc=$?
check "chat: --max-tokens 0 is refused (it would still sample a token)" clean_error $rc
check "chat: ... saying why" contains "$tmp/e16" "--max-tokens must be >= 1"
"$hearth" transcribe "$tmp/none.wav" --model "$tmp/nope" --format txt >/dev/null 2>"$tmp/e10"; rc=$?
check "transcribe: an unknown --format is refused before anything loads" clean_error $rc
check "transcribe: ... by name" contains "$tmp/e10" "--format must be"

# A Whisper checkpoint as --model makes a transcription-only server, told
# from config.json alone in either layout; a second Whisper model and the
# flags of a chat model are refused before anything loads.
mkdir -p "$tmp/whisper-hf" "$tmp/whisper-mlx"
echo '{"model_type": "whisper"}' >"$tmp/whisper-hf/config.json"
echo '{"n_audio_state": 384}' >"$tmp/whisper-mlx/config.json"
for w in whisper-hf whisper-mlx; do
  "$hearth" serve --model "$tmp/$w" --whisper-model "$tmp/$w" --port 0 >/dev/null 2>"$tmp/e4"; rc=$?
  check "serve: a Whisper --model ($w) with --whisper-model is refused" clean_error $rc
  check "serve: ... saying why" contains "$tmp/e4" "is a Whisper checkpoint, which makes a transcription-only server"
done
"$hearth" serve --model "$tmp/whisper-hf" --prompt-cache 1 --port 0 >/dev/null 2>"$tmp/e5"; rc=$?
check "serve: a chat model's flag with a Whisper --model is refused" clean_error $rc
check "serve: ... by name" contains "$tmp/e5" "--prompt-cache configures a chat model"

"$hearth" bench --prefill 8 --decode 8 --repeats 1 --json >"$tmp/bench.json" 2>/dev/null
check "bench --json prints the measurements" \
  node -e 'const b=JSON.parse(require("fs").readFileSync(process.argv[1]));
           if(!(b.decode.tokens_per_second>0 && b.prefill[0].tokens_per_second>0 && b.memory_read_bandwidth_gbps>0)) process.exit(1)' \
  "$tmp/bench.json"

check "bench --json: each mode's time choosing a token, and what sampling adds to a step" \
  node -e 'const b=JSON.parse(require("fs").readFileSync(process.argv[1])); const s=b.sampled_decode;
           const added=(s.choosing_ms_per_token-s.greedy_choosing_ms_per_token)/1e3*b.decode.tokens_per_second;
           if(!(s.choosing_ms_per_token>0 && s.greedy_choosing_ms_per_token>0 &&
                Math.abs(s.added_fraction_of_greedy_step-added)<1e-9)) process.exit(1)' \
  "$tmp/bench.json"

thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
check "bench --json names the kernel's huge-page setting" \
  node -e 'const b=JSON.parse(require("fs").readFileSync(process.argv[1]));
           if(b.transparent_huge_pages!==(process.argv[2]||"none")) process.exit(1)' \
  "$tmp/bench.json" "$thp"

"$hearth" bench --prefill 8 --decode 8 --repeats 1 --json >"$tmp/b1.json" 2>/dev/null
"$hearth" bench --prefill 8 --decode 8 --context 200 --repeats 1 --json >"$tmp/b200.json" 2>/dev/null
check "bench --context: decodes after the prompt and counts its KV reads in the bytes" \
  node -e 'const fs=require("fs"); const [a,b]=process.argv.slice(1).map(f=>JSON.parse(fs.readFileSync(f)));
           if(!(b.decode.context===200 && a.decode.context===1 && b.decode.bytes_per_token>a.decode.bytes_per_token)) process.exit(1)' \
  "$tmp/b1.json" "$tmp/b200.json"

"$hearth" bench --prefill 8 --decode 8 --context 4 --repeats 1 --streams 3,1 --json >"$tmp/bs.json" 2>/dev/null
check "bench --streams: one stream first, then the batched rate and its ratio" \
  node -e 'const s=JSON.parse(require("fs").readFileSync(process.argv[1])).streams;
           if(!(s.length===2 && s[0].streams===1 && s[0].ratio_to_one_stream===1 && s[1].streams===3 &&
                s[1].tokens_per_second>0 && Math.abs(s[1].per_stream*3-s[1].tokens_per_second)<1e-9 &&
                Math.abs(s[1].ratio_to_one_stream-s[1].tokens_per_second/s[0].tokens_per_second)<1e-9)) process.exit(1)' \
  "$tmp/bs.json"
"$hearth" bench --prefill 8 --decode 8 --repeats 0 >/dev/null 2>"$tmp/e8"; rc=$?
check "bench --repeats 0 is refused" clean_error $rc
"$hearth" bench --prefill 8 --decode 1 --repeats 1 >/dev/null 2>"$tmp/e9"; rc=$?
check "bench --decode 1 is refused (no decode step to time)" clean_error $rc
"$hearth" bench --prefill 8 --decode 8 --repeats 1 --streams 0 >/dev/null 2>"$tmp/e6"; rc=$?
check "bench --streams 0 is refused" clean_error $rc
"$hearth" bench --prefill 8 --decode 8 --repeats 1 --streams 2,x >/dev/null 2>"$tmp/e7"; rc=$?
check "bench --streams: a count that is not a number is refused" clean_error $rc
check "... by name" contains "$tmp/e7" "--streams: 'x' is not a stream count"

# Ctrl-C during a reply stops that reply, not the session: a random-weight
# 0.6B model writes on for minutes (no EOS, 40k context) until it comes.
"$hearth" mkmodel --arch qwen3 --preset qwen3-0.6b --dtype bf16 --quant mlx4 --out "$tmp/long" >/dev/null 2>&1
mkfifo "$tmp/chat.in"
"$hearth" chat --model "$tmp/long" --stats --threads 1 <"$tmp/chat.in" >"$tmp/chat4" 2>"$tmp/chat4.err" &
chat_pid=$!
exec 3>"$tmp/chat.in"
echo "Tell me a long story." >&3
for _ in $(seq 600); do [ -s "$tmp/chat4" ] && break; sleep 0.1; done
kill -INT "$chat_pid"
for _ in $(seq 300); do grep -q "generated\]" "$tmp/chat4.err" && break; sleep 0.1; done
# Ctrl-C while a long prompt is read (a minute on one thread of this
# 2-core machine, well past 2 s on any CPU) stops it there, before a token
# is made; the turn leaves no trace.
long_prompt=$(for i in $(seq 150); do printf 'The quick brown fox jumps. '; done)
echo "$long_prompt" >&3
sleep 2
kill -INT "$chat_pid"
for _ in $(seq 1200); do [ "$(grep -c "generated\]" "$tmp/chat4.err")" -ge 2 ] && break; sleep 0.1; done
echo "/exit" >&3
exec 3>&-
timeout 60 tail --pid="$chat_pid" -f /dev/null; wait "$chat_pid"; rc=$?
check "chat: Ctrl-C stops the reply and the session goes on to /exit" test "$rc" -eq 0
check "chat: ... saying so" contains "$tmp/chat4.err" "[stopped]"
check "chat: Ctrl-C while the prompt is read stops before the first token" \
  sh -c 'grep "generated\]" "$1" | tail -1 | grep -q "; 0 generated\]"' _ "$tmp/chat4.err"
rm -rf "$tmp/long"

# fit reads headers only; the loaded model (bench) and a running server
# (/stats) must agree with it. The KV figure is worked out from config.json.
"$hearth" mkmodel --arch qwen3 --dtype bf16 --quant mlx4 --group-size 32 --out "$tmp/q4" >/dev/null 2>&1
for m in "" "$tmp/q4"; do
  "$hearth" fit ${m:+--model "$m"} --json >"$tmp/fit.json" 2>/dev/null
  "$hearth" bench ${m:+--model "$m"} --prefill 8 --decode 2 --repeats 1 --json >"$tmp/fitb.json" 2>/dev/null
  check "fit --json: the weights and KV a token, as the loaded model has them (${m:-bundled})" \
    node -e 'const fs=require("fs"); const [f,b]=process.argv.slice(1,3).map(x=>JSON.parse(fs.readFileSync(x)));
             const c=JSON.parse(fs.readFileSync(process.argv[3]+"/config.json"));
             const bytes=f.kv_type==="BF16"?2:4, hd=c.head_dim||c.hidden_size/c.num_attention_heads;
             if(!(f.weights_bytes===b.weight_bytes && f.weights_fit===true && f.kv_type===process.argv[4] &&
                  f.kv_bytes_per_token===2*c.num_hidden_layers*c.num_key_value_heads*hd*bytes)) process.exit(1)' \
    "$tmp/fit.json" "$tmp/fitb.json" "${m:-$(dirname "$0")/../../models/stories260k}" "$([ -n "$m" ] && echo BF16 || echo F32)"
done
"$hearth" fit --kv-budget 0.0002 --ctx-size 300 --ssd-cache "$tmp/fit-ssd" --ssd-spill-queue 0.5 --json >"$tmp/fit.json" 2>/dev/null
"$hearth" serve --kv-budget 0.0002 --ctx-size 300 --ssd-cache "$tmp/fit-ssd" --ssd-spill-queue 0.5 --port 0 >"$tmp/serve.out" 2>/dev/null &
spid=$!
for _ in $(seq 100); do grep -q listening "$tmp/serve.out" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/serve.out")
check "fit: serve with the same options makes the same plan" \
  node -e 'const f=JSON.parse(require("fs").readFileSync(process.argv[1]));
           fetch(process.argv[2]+"/stats").then(r=>r.json()).then(s=>{ const a=s.admission;
             process.exit(a.memory_budget_bytes===f.kv_budget_bytes && a.max_safe_context===f.kv_tokens &&
                          a.enforced_context_tokens===f.context && f.context===256 &&
                          a.ssd_queue_bytes===f.ssd_queue_bytes && f.ssd_queue_bytes>=2**29 ? 0 : 1); }, ()=>process.exit(1))' \
  "$tmp/fit.json" "$url"
kill $spid; wait $spid 2>/dev/null
"$hearth" fit --memory 0.0000001 >"$tmp/fit.txt" 2>&1; rc=$?
check "fit: weights past the memory exit 1 and say so" \
  sh -c '[ "$1" -eq 1 ] && grep -q "does not fit" "$2"' _ $rc "$tmp/fit.txt"
"$hearth" fit --memory -1 >/dev/null 2>"$tmp/e10"; rc=$?
check "fit --memory -1 is refused by name" sh -c '{ [ "$1" -eq 1 ] || [ "$1" -eq 2 ]; } && grep -q -- "--memory" "$2"' _ $rc "$tmp/e10"

# models: a folder of checkpoints and a hub cache, as huggingface-cli leaves
# it (snapshot files are links to blobs; refs/main names the current one).
mkdir -p "$tmp/lib/gemma" "$tmp/lib/whisper" "$tmp/hub/models--Org--Tiny/snapshots/old" "$tmp/hub/models--Org--Tiny/refs" "$tmp/hub/models--Org--Tiny/blobs"
cp -r "$tmp/q4" "$tmp/lib/q4"
echo '{"architectures": ["GemmaForCausalLM"], "model_type": "gemma"}' >"$tmp/lib/gemma/config.json"
echo '{"model_type": "whisper"}' >"$tmp/lib/whisper/config.json"
bundled=$(cd "$(dirname "$0")/../../models/stories260k" && pwd)
snap="$tmp/hub/models--Org--Tiny/snapshots/abc123"
mkdir -p "$snap"
for f in "$bundled"/*; do cp "$f" "$tmp/hub/models--Org--Tiny/blobs/$(basename "$f")"; ln -s "../../blobs/$(basename "$f")" "$snap/$(basename "$f")"; done
printf abc123 >"$tmp/hub/models--Org--Tiny/refs/main"
"$hearth" models "$tmp/lib" "$tmp/hub" --json >"$tmp/models.json" 2>/dev/null
check "models --json: each checkpoint, whether it can be served, and why not" \
  node -e 'const m=JSON.parse(require("fs").readFileSync(process.argv[1])); const by=Object.fromEntries(m.map(x=>[x.name,x]));
           const ok = m.map(x=>x.name).join()==="gemma,q4,whisper,Org/Tiny" &&
             by.q4.servable && by.q4.kind==="text" && by.q4.format==="MLX 4-bit g32" && by.q4.architecture==="Qwen3ForCausalLM" &&
             by["Org/Tiny"].servable && by["Org/Tiny"].format==="F32" && by["Org/Tiny"].weights_bytes===1040128 &&
             by["Org/Tiny"].context===512 && by["Org/Tiny"].path.endsWith("snapshots/abc123") &&
             !by.gemma.servable && by.gemma.problem.includes("GemmaForCausalLM") &&
             by.whisper.kind==="speech" && !by.whisper.servable;
           process.exit(ok ? 0 : 1)' "$tmp/models.json"
HEARTH_MODELS="$tmp/lib" HF_HUB_CACHE="$tmp/hub" "$hearth" models >"$tmp/models.txt" 2>&1
check "models: with no folder, \$HEARTH_MODELS and the hub cache" \
  sh -c 'grep -q "^Org/Tiny .*F32" "$1" && grep -q "^q4 " "$1" && grep -q "cannot serve" "$1"' _ "$tmp/models.txt"
"$hearth" serve --model "$snap" --port 0 >"$tmp/serve2.out" 2>/dev/null &
spid=$!
for _ in $(seq 100); do grep -q listening "$tmp/serve2.out" && break; sleep 0.1; done
check "serve: a hub snapshot's model id is ORG/NAME" \
  node -e 'fetch(process.argv[1]+"/v1/models").then(r=>r.json()).then(j=>process.exit(j.data[0].id==="Org/Tiny"?0:1), ()=>process.exit(1))' \
  "$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/serve2.out")"
kill $spid; wait $spid 2>/dev/null
"$hearth" models "$tmp/nope" >/dev/null 2>"$tmp/e11"; rc=$?
check "models: a missing folder is refused by name" sh -c '{ [ "$1" -eq 1 ] || [ "$1" -eq 2 ]; } && grep -q "nope" "$2"' _ $rc "$tmp/e11"

"$hearth" nonsense >/dev/null 2>&1; rc=$?
check "an unknown command is refused" clean_error $rc

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
