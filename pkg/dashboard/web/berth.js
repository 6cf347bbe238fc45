// Follows the cluster: the server says when something changed, and the
// page fetches its own content again, without a reload.
(function () {
  var status = document.getElementById('status');
  var content = document.getElementById('content');
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    var url = location.pathname + location.search + (location.search ? '&' : '?') + 'fragment=1';
    fetch(url).then(function (r) { return r.text(); }).then(function (html) {
      content.innerHTML = html;
      document.body.dataset.updates = (Number(document.body.dataset.updates || 0) + 1).toString();
    }).finally(function () {
      busy = false;
      if (again) { again = false; refresh(); }
    });
  }
  var updates = new EventSource('updates');
  updates.onmessage = refresh;
  updates.onopen = function () { status.className = ''; };
  updates.onerror = function () { status.className = 'down'; };
})();
