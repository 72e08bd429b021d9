/* headwise from C: load a model (the built-in synthetic "tiny", or a path given on the
 * command line), prefill "hello", print a few greedy tokens.
 *
 *   headwise_example                          synthetic "tiny"
 *   headwise_example MODEL [TOKENIZER.bin]    model.json / folder / llama2.c checkpoint
 *
 * Exits 0 on success, 1 with headwise's message on stderr otherwise. */
#include <stdio.h>

#include "headwise/headwise.h"

#define STEPS 8

static int fail(const char* what) {
  fprintf(stderr, "headwise_example: %s: %s\n", what, hw_last_error());
  return 1;
}

int main(int argc, char** argv) {
  hw_model* model = NULL;
  hw_session* session = NULL;
  hw_sampler* sampler = NULL;
  struct hw_model_info info;
  hw_session_options opts = {1, 64, HW_KV_F16}; /* 1 thread, 64 positions, f16 KV cache */
  int32_t prompt[64];
  int n = 0, rc = 1, step;
  int32_t prev, generated[STEPS];
  int n_generated = 0;

  if (argc > 1 ? hw_model_load(argv[1], argc > 2 ? argv[2] : NULL, &model)
               : hw_model_synthetic("tiny", 1, &model)) {
    fail("loading the model");
    goto done;
  }
  if (hw_model_info(model, &info)) { fail("model info"); goto done; }
  if (hw_tokenize(model, "hello", 1, prompt, 64, &n)) { fail("tokenize"); goto done; }
  if (hw_session_open(model, &opts, &session)) { fail("open session"); goto done; }
  if (hw_session_prefill(session, prompt, n)) { fail("prefill"); goto done; }
  if (hw_sampler_new(info.vocab_size, 0.0f, 1.0f, 1, &sampler)) { fail("sampler"); goto done; }

  printf("kernels %s, vocab %d, prompt %d tokens\nhello", hw_isa(), info.vocab_size, n);
  prev = prompt[n - 1];
  for (step = 0; step < STEPS; ++step) {
    const float* logits = NULL;
    int vocab = 0, len = 0;
    int32_t next = 0;
    char piece[64];
    if (hw_session_logits(session, &logits, &vocab)) { fail("logits"); goto done; }
    if (hw_sampler_sample(sampler, logits, &next)) { fail("sample"); goto done; }
    if (next == info.bos_id) break;
    if (hw_detokenize_piece(model, prev, next, piece, sizeof piece, &len)) { fail("detokenize"); goto done; }
    fputs(piece, stdout);
    generated[n_generated++] = next;
    if (hw_session_decode(session, next)) { fail("decode"); goto done; }
    prev = next;
  }
  /* the ids too: a synthetic model's pieces are often unprintable bytes */
  printf("\ngenerated ids:");
  for (step = 0; step < n_generated; ++step) printf(" %d", (int)generated[step]);
  printf("\n");
  rc = 0;

done:
  /* a session may outlive the model handle; both orders are fine */
  hw_model_free(model);
  hw_session_close(session);
  hw_sampler_free(sampler);
  return rc;
}
