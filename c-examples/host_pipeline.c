/* host_pipeline: the host runtime end to end, as a C host uses it, with a readable report.
 *
 * For each kind of work queue ("s": the calling thread runs the work while it waits;
 * "mstd:2,4": two workers and up to four blocking threads) it builds a small dataflow graph:
 *
 *   square[i] = i*i          (i = 1..16)  one enqueued task each
 *   sum       = sum(square)              run_when_ready over all 16, then an enqueued task
 *   mean      = sum / 16                 and_then on sum (runs on the thread that set sum)
 *   total     = indirect -> sum          forwarded before sum exists
 *   ratio     = (square[2] - square[1]) / (square[1] - 1)   an error: division by zero
 *   scaled    = 10 * ratio               and_then on ratio: the error propagates
 *   report    = chain(mean, scaled)      run_when_ready: the error propagates a second hop
 *
 * then awaits the results, quiesces, counts work, cancels and restarts. Every result is
 * compared with the value computed here by hand; the exit status is 0 only if all match. */
#define _POSIX_C_SOURCE 200809L

#include <rtx.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SQUARE_COUNT = 16, QUIESCE_TASKS = 64 };

static int failures;

/* Prints one report line: what was checked, what came out, and ok/FAILED. */
static void report(bool ok, const char* step, const char* what) {
  printf("  %-8s %-66s %s\n", step, what, ok ? "ok" : "FAILED");
  if (!ok) {
    ++failures;
  }
}

/* Reports an unexpected error from a call that must succeed; returns whether it succeeded. */
static bool succeeded(const char* call, rtx_error_t* error) {
  if (error == NULL) {
    return true;
  }
  printf("  %s failed: %s: %s\n", call, rtx_status_code_name(rtx_error_code(error)), rtx_error_message(error));
  ++failures;
  rtx_error_delete(error);
  return false;
}

typedef struct pipeline pipeline_t;

typedef struct {
  pipeline_t* pipeline;
  int64_t index; /* 1-based */
} square_job_t;

struct pipeline {
  rtx_context_t* context;
  rtx_async_value_t* square[SQUARE_COUNT];
  square_job_t jobs[SQUARE_COUNT];
  rtx_async_value_t* sum;
  rtx_async_value_t* mean;
  rtx_async_value_t* total;
  rtx_async_value_t* ratio;
  rtx_async_value_t* scaled;
  rtx_async_value_t* report;
  atomic_int counted;
  atomic_int mean_callbacks;
};

/* Makes `value` an error carrying `error`'s message when an enqueue inside the graph fails, so
 * that nobody waits forever for it. Consumes `error`. */
static void fail_value(rtx_async_value_t* value, rtx_error_t* error) {
  rtx_async_value_set_error(value, rtx_error_message(error));
  rtx_error_delete(error);
}

static void square_task(void* user_data) {
  square_job_t* job = user_data;
  rtx_error_t* error = rtx_async_value_set_i64(job->pipeline->square[job->index - 1], job->index * job->index);
  if (error != NULL) {
    fail_value(job->pipeline->sum, error);
  }
}

static void sum_task(void* user_data) {
  pipeline_t* p = user_data;
  int64_t sum = 0;
  for (int i = 0; i < SQUARE_COUNT; ++i) {
    int64_t square = 0;
    rtx_error_t* error = rtx_async_value_get_i64(p->square[i], &square);
    if (error != NULL) {
      fail_value(p->sum, error);
      return;
    }
    sum += square;
  }
  rtx_error_t* error = rtx_async_value_set_i64(p->sum, sum);
  if (error != NULL) {
    rtx_error_delete(error);
  }
}

/* run_when_ready(square[0..16]): runs on the thread that set the last square. */
static void squares_ready(void* user_data) {
  pipeline_t* p = user_data;
  rtx_error_t* error = rtx_context_enqueue(p->context, sum_task, p);
  if (error != NULL) {
    fail_value(p->sum, error);
  }
}

/* and_then(sum): mean = sum / 16, or sum's error. */
static void sum_ready(void* user_data) {
  pipeline_t* p = user_data;
  atomic_fetch_add(&p->mean_callbacks, 1);
  int64_t sum = 0;
  rtx_error_t* error = rtx_async_value_get_i64(p->sum, &sum);
  if (error != NULL) {
    fail_value(p->mean, error);
    return;
  }
  error = rtx_async_value_set_f64(p->mean, (double)sum / SQUARE_COUNT);
  if (error != NULL) {
    rtx_error_delete(error);
  }
}

static void ratio_task(void* user_data) {
  pipeline_t* p = user_data;
  int64_t one = 0;
  int64_t four = 0;
  rtx_error_t* error = rtx_async_value_get_i64(p->square[0], &one);
  if (error == NULL) {
    error = rtx_async_value_get_i64(p->square[1], &four);
  }
  if (error != NULL) {
    fail_value(p->ratio, error);
    return;
  }
  int64_t denominator = one - 1;
  if (denominator == 0) {
    rtx_async_value_set_error(p->ratio, "ratio_task: division by zero (square[1] - 1 == 0)");
    return;
  }
  error = rtx_async_value_set_f64(p->ratio, (double)(four - one) / (double)denominator);
  if (error != NULL) {
    rtx_error_delete(error);
  }
}

static void ratio_inputs_ready(void* user_data) {
  pipeline_t* p = user_data;
  rtx_error_t* error = rtx_context_enqueue(p->context, ratio_task, p);
  if (error != NULL) {
    fail_value(p->ratio, error);
  }
}

/* and_then(ratio): scaled = 10 * ratio; an error in ratio becomes scaled's error. */
static void ratio_ready(void* user_data) {
  pipeline_t* p = user_data;
  rtx_error_t* ratio_error = rtx_async_value_get_error(p->ratio);
  if (ratio_error != NULL) {
    char message[512];
    snprintf(message, sizeof message, "scaled: input 'ratio' failed: %s", rtx_error_message(ratio_error));
    rtx_error_delete(ratio_error);
    rtx_async_value_set_error(p->scaled, message);
    return;
  }
  double ratio = 0;
  rtx_error_t* error = rtx_async_value_get_f64(p->ratio, &ratio);
  if (error == NULL) {
    error = rtx_async_value_set_f64(p->scaled, 10 * ratio);
  }
  if (error != NULL) {
    fail_value(p->scaled, error);
  }
}

/* run_when_ready(mean, scaled): report is a chain, or the first input's error. */
static void report_inputs_ready(void* user_data) {
  pipeline_t* p = user_data;
  rtx_async_value_t* inputs[] = {p->mean, p->scaled};
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; ++i) {
    rtx_error_t* error = rtx_async_value_get_error(inputs[i]);
    if (error != NULL) {
      char message[1024];
      snprintf(message, sizeof message, "report: %s", rtx_error_message(error));
      rtx_error_delete(error);
      rtx_async_value_set_error(p->report, message);
      return;
    }
  }
  rtx_error_t* error = rtx_async_value_set_chain(p->report);
  if (error != NULL) {
    rtx_error_delete(error);
  }
}

static void count_task(void* user_data) {
  pipeline_t* p = user_data;
  atomic_fetch_add(&p->counted, 1);
}

static void run_dataflow(pipeline_t* p) {
  char line[256];
  for (int i = 0; i < SQUARE_COUNT; ++i) {
    p->square[i] = rtx_async_value_new_unavailable();
  }
  p->sum = rtx_async_value_new_unavailable();
  p->mean = rtx_async_value_new_unavailable();
  p->total = rtx_async_value_new_indirect();
  p->ratio = rtx_async_value_new_unavailable();
  p->scaled = rtx_async_value_new_unavailable();
  p->report = rtx_async_value_new_unavailable();

  /* Wire the graph first, then start the leaves: every edge exists before data flows. */
  succeeded("rtx_async_value_forward", rtx_async_value_forward(p->total, p->sum));
  rtx_async_value_run_when_ready(p->square, SQUARE_COUNT, squares_ready, p);
  rtx_async_value_and_then(p->sum, sum_ready, p);
  rtx_async_value_t* ratio_inputs[] = {p->square[0], p->square[1]};
  rtx_async_value_run_when_ready(ratio_inputs, 2, ratio_inputs_ready, p);
  rtx_async_value_and_then(p->ratio, ratio_ready, p);
  rtx_async_value_t* report_inputs[] = {p->mean, p->scaled};
  rtx_async_value_run_when_ready(report_inputs, 2, report_inputs_ready, p);
  for (int i = 0; i < SQUARE_COUNT; ++i) {
    p->jobs[i] = (square_job_t){.pipeline = p, .index = i + 1};
    succeeded("rtx_context_enqueue", rtx_context_enqueue(p->context, square_task, &p->jobs[i]));
  }

  rtx_async_value_t* results[] = {p->total, p->mean, p->report};
  succeeded("rtx_async_value_await", rtx_async_value_await(p->context, results, 3));
  /* Tasks may still be returning after setting their values: wait for them before we check. */
  rtx_context_quiesce(p->context);

  /* By hand: 1 + 4 + ... + 256 = 16*17*33/6 = 1496; 1496 / 16 = 93.5. */
  int64_t expected_sum = 0;
  for (int64_t i = 1; i <= SQUARE_COUNT; ++i) {
    expected_sum += i * i;
  }
  const double expected_mean = (double)expected_sum / SQUARE_COUNT;

  bool squares_ok = true;
  for (int64_t i = 1; i <= SQUARE_COUNT; ++i) {
    int64_t square = -1;
    rtx_error_t* error = rtx_async_value_get_i64(p->square[i - 1], &square);
    squares_ok = squares_ok && error == NULL && square == i * i;
    rtx_error_delete(error);
  }
  snprintf(line, sizeof line, "%d enqueued tasks set square[i] = i*i for i = 1..%d", SQUARE_COUNT, SQUARE_COUNT);
  report(squares_ok, "squares", line);

  int64_t sum = -1;
  rtx_error_t* error = rtx_async_value_get_i64(p->sum, &sum);
  snprintf(line, sizeof line, "run_when_ready(16 squares) -> task: %lld (by hand %lld)", (long long)sum,
           (long long)expected_sum);
  report(error == NULL && sum == expected_sum, "sum", line);
  rtx_error_delete(error);

  double mean = -1;
  error = rtx_async_value_get_f64(p->mean, &mean);
  int mean_callbacks = atomic_load(&p->mean_callbacks);
  snprintf(line, sizeof line, "and_then(sum) -> sum / 16 = %.2f (by hand %.2f), callback ran %dx", mean, expected_mean,
           mean_callbacks);
  report(error == NULL && mean == expected_mean && mean_callbacks == 1, "mean", line);
  rtx_error_delete(error);

  int64_t total = -1;
  error = rtx_async_value_get_i64(p->total, &total);
  snprintf(line, sizeof line, "indirect value forwarded to sum before it existed: %lld", (long long)total);
  report(error == NULL && total == expected_sum, "indirect", line);
  rtx_error_delete(error);

  rtx_error_t* ratio_error = rtx_async_value_get_error(p->ratio);
  rtx_error_t* scaled_error = rtx_async_value_get_error(p->scaled);
  rtx_error_t* report_error = rtx_async_value_get_error(p->report);
  bool propagated = ratio_error != NULL && scaled_error != NULL && report_error != NULL &&
                    strstr(rtx_error_message(report_error), "division by zero") != NULL &&
                    strstr(rtx_error_message(report_error), "input 'ratio' failed") != NULL;
  snprintf(line, sizeof line, "ratio -> scaled -> report all errors: %s",
           report_error != NULL ? rtx_status_code_name(rtx_error_code(report_error)) : "(no error)");
  report(propagated, "error", line);
  if (report_error != NULL) {
    printf("           report's message: \"%s\"\n", rtx_error_message(report_error));
  }
  rtx_error_delete(ratio_error);
  rtx_error_delete(scaled_error);
  rtx_error_delete(report_error);

  bool chain_ok = rtx_async_value_is_available(p->report) && rtx_async_value_is_error(p->report) &&
                  rtx_async_value_is_available(p->mean) && !rtx_async_value_is_error(p->mean);
  report(chain_ok, "await", "await(total, mean, report) returned with all three available");

  for (int i = 0; i < SQUARE_COUNT; ++i) {
    rtx_async_value_release(p->square[i]);
  }
  rtx_async_value_release(p->sum);
  rtx_async_value_release(p->mean);
  rtx_async_value_release(p->total);
  rtx_async_value_release(p->ratio);
  rtx_async_value_release(p->scaled);
  rtx_async_value_release(p->report);
}

static void run_quiesce_and_cancel(pipeline_t* p) {
  char line[256];
  atomic_store(&p->counted, 0);
  for (int i = 0; i < QUIESCE_TASKS; ++i) {
    succeeded("rtx_context_enqueue", rtx_context_enqueue(p->context, count_task, p));
  }
  rtx_context_quiesce(p->context);
  int counted = atomic_load(&p->counted);
  snprintf(line, sizeof line, "%d tasks enqueued, %d had run when quiesce returned", QUIESCE_TASKS, counted);
  report(counted == QUIESCE_TASKS, "quiesce", line);

  rtx_context_cancel(p->context);
  rtx_error_t* refused = rtx_context_enqueue(p->context, count_task, p);
  bool cancelled = rtx_context_is_cancelled(p->context) && refused != NULL &&
                   rtx_error_code(refused) == RTX_STATUS_CODE_CANCELLED;
  snprintf(line, sizeof line, "enqueue after cancel -> %s",
           refused != NULL ? rtx_status_code_name(rtx_error_code(refused)) : "accepted (wrong)");
  report(cancelled, "cancel", line);
  rtx_error_delete(refused);

  rtx_context_restart(p->context);
  rtx_error_t* accepted = rtx_context_enqueue(p->context, count_task, p);
  rtx_context_quiesce(p->context);
  counted = atomic_load(&p->counted);
  snprintf(line, sizeof line, "after restart: enqueue %s, task ran (%d counted)",
           accepted == NULL ? "accepted" : rtx_error_message(accepted), counted);
  report(accepted == NULL && !rtx_context_is_cancelled(p->context) && counted == QUIESCE_TASKS + 1, "restart", line);
  rtx_error_delete(accepted);
}

typedef struct {
  rtx_async_value_t* result;
} blocking_job_t;

/* May block: it runs on the blocking pool. */
static void blocking_task(void* user_data) {
  blocking_job_t* job = user_data;
  struct timespec nap = {.tv_sec = 0, .tv_nsec = 5 * 1000 * 1000};
  nanosleep(&nap, NULL);
  rtx_error_t* error = rtx_async_value_set_i32(job->result, 42);
  if (error != NULL) {
    fail_value(job->result, error);
  }
}

static void run_blocking(rtx_context_t* context) {
  blocking_job_t job = {.result = rtx_async_value_new_unavailable()};
  succeeded("rtx_context_enqueue_blocking", rtx_context_enqueue_blocking(context, blocking_task, &job));
  succeeded("rtx_async_value_await", rtx_async_value_await(context, &job.result, 1));
  rtx_context_quiesce(context);
  int32_t value = 0;
  rtx_error_t* error = rtx_async_value_get_i32(job.result, &value);
  report(error == NULL && value == 42, "blocking", "enqueue_blocking: a task that sleeps 5 ms, then sets 42; awaited");
  rtx_error_delete(error);
  rtx_async_value_release(job.result);
}

static void run_queue(const char* spec, uint32_t expected_parallelism) {
  rtx_context_options_t options;
  rtx_context_options_init(&options);
  options.work_queue = spec;
  rtx_context_t* context = NULL;
  if (!succeeded("rtx_context_new", rtx_context_new(&options, &context))) {
    return;
  }
  uint32_t parallelism = rtx_context_parallelism(context);
  printf("\nqueue \"%s\" (parallelism %u)\n", spec, parallelism);
  char line[128];
  snprintf(line, sizeof line, "parallelism %u (expected %u)", parallelism, expected_parallelism);
  report(parallelism == expected_parallelism, "context", line);

  pipeline_t* p = calloc(1, sizeof *p);
  if (p == NULL) {
    printf("out of memory\n");
    exit(1);
  }
  p->context = context;
  run_dataflow(p);
  run_quiesce_and_cancel(p);
  if (expected_parallelism > 1) {
    run_blocking(context);
  }
  free(p);
  rtx_context_release(context);
}

int main(void) {
  const char* library_version = rtx_version();
  printf("rtx host pipeline: library %s (ABI %u), header %s (ABI %d)\n", library_version, rtx_abi_version(),
         RTX_VERSION, RTX_ABI_VERSION);
  char line[128];
  snprintf(line, sizeof line, "library %s / header %s", library_version, RTX_VERSION);
  report(strcmp(library_version, RTX_VERSION) == 0 && rtx_abi_version() == RTX_ABI_VERSION, "version", line);

  run_queue("s", 1);
  run_queue("mstd:2,4", 2);

  if (failures != 0) {
    printf("\n%d check(s) FAILED\n", failures);
    return 1;
  }
  printf("\nall checks passed\n");
  return 0;
}
