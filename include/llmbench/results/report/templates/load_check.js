window.__errors = window.__errors || [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
window.addEventListener('load', function () {
  var charts = document.querySelectorAll('div.chart');
  var drawn = Array.prototype.filter.call(charts, function (c) { return c.querySelector('svg.main-svg'); });
  document.body.setAttribute('data-charts', charts.length);
  document.body.setAttribute('data-charts-drawn', drawn.length);
  document.body.setAttribute('data-errors', window.__errors.length);
});
