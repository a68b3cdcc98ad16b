// Follows a submission while the worker has it (queued, running) and reloads its page once the
// status changes, so the verdict and its flags are rendered (and escaped) by the server.
(function () {
  var node = document.getElementById("submission-status");
  if (!node) return;
  var url = node.getAttribute("data-status-url");
  var shown = node.getAttribute("data-status");
  if (shown !== "queued" && shown !== "running") return;
  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("status " + response.status);
        return response.json();
      })
      .then(function (submission) {
        if (submission.status === shown) {
          setTimeout(poll, 3000);
        } else {
          window.location.reload();
        }
      })
      .catch(function () { setTimeout(poll, 15000); });
  }
  setTimeout(poll, 3000);
})();
