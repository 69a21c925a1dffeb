/* The sandbox process of every pod on the test node: it holds the pod's namespaces, reaps
 * orphans (it is PID 1 when the pod shares its PID namespace) and exits on SIGINT or SIGTERM.
 * The cluster suite builds it statically and wraps it in an image of its own, because no
 * registry here serves the upstream pause image. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int signal_number) {
  (void)signal_number;
  _exit(0);
}

static void reap(int signal_number) {
  (void)signal_number;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  if (getpid() != 1) {
    fprintf(stderr, "pause: not PID 1; reaping only orphans of this process\n");
  }
  struct sigaction on_stop = {.sa_handler = stop};
  struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &on_stop, NULL) != 0 || sigaction(SIGTERM, &on_stop, NULL) != 0 ||
      sigaction(SIGCHLD, &on_child, NULL) != 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) {
    pause();
  }
}
