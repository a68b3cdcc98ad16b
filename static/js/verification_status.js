// Follows a queued or running re-verification and reloads the kernel page once it finished.
(function () {
  var node = document.getElementById("verification-progress");
  if (!node) return;
  var url = node.getAttribute("data-status-url");
  function poll() {
    fetch(url, { headers: { Accept: "application/json" } })
      .then(function (response) { return response.json(); })
      .then(function (run) {
        if (run.status === "queued" || run.status === "running") {
          var label = node.querySelector(".status");
          label.textContent = run.status;
          label.className = "status " + run.status;
          setTimeout(poll, 5000);
        } else {
          window.location.reload();
        }
      })
      .catch(function () { setTimeout(poll, 15000); });
  }
  setTimeout(poll, 5000);
})();
