// The Server-Sent Events page (events.html): one EventSource on /topics/{t}/events. The
// browser reconnects by itself after a drop and sends Last-Event-ID, so the list continues
// right after the last record shown.
(function () {
    "use strict";

    const maxRows = 1000;
    const $ = (id) => document.getElementById(id);
    let stream = null;
    let count = 0;
    let reconnects = 0;

    function showState(state, text) {
        $("status").dataset.state = state;
        $("status").textContent = text;
    }

    function cell(text) {
        const td = document.createElement("td");
        td.textContent = text;
        return td;
    }

    function onRecord(r, eventId) {
        const tr = document.createElement("tr");
        tr.dataset.partition = String(r.partition);
        tr.dataset.offset = String(r.offset);
        tr.dataset.eventId = eventId;
        tr.append(cell(eventId), cell(String(r.partition)), cell(String(r.offset)),
                  cell(r.key === null || r.key === undefined ? "null" : String(r.key)),
                  cell(typeof r.value === "string" ? r.value : JSON.stringify(r.value)));
        $("records").append(tr);
        while ($("records").rows.length > maxRows) {
            $("records").deleteRow(0);
        }
        count += 1;
        $("count").textContent = String(count);
        $("last-event-id").textContent = eventId;
    }

    function open(topic, group, from) {
        if (stream) {
            stream.close();
        }
        const options = { from: from, onRecord: onRecord,
                          onOpen: () => showState("open", "streaming"),
                          onError: (info) => {
                              if (info.readyState === 2) {
                                  showState("closed", "closed");
                                  return;
                              }
                              reconnects += 1;
                              $("reconnects").textContent = String(reconnects);
                              showState("waiting", "reconnecting…");
                          } };
        if (group) {
            options.group = group;
        }
        showState("connecting", "connecting…");
        stream = sluice.events(topic, options);
        document.body.dataset.subscribed = topic;
    }

    $("events-form").addEventListener("submit", (ev) => {
        ev.preventDefault();
        const topic = $("topic").value.trim();
        const q = new URLSearchParams({ topic: topic, from: $("from").value });
        if ($("group").value.trim()) {
            q.set("group", $("group").value.trim());
        }
        history.replaceState(null, "", "?" + q.toString());
        open(topic, $("group").value.trim(), $("from").value);
    });

    const q = new URLSearchParams(location.search);
    if (q.get("topic")) {
        $("topic").value = q.get("topic");
        $("group").value = q.get("group") || "";
        $("from").value = q.get("from") === "earliest" ? "earliest" : "latest";
        open(q.get("topic"), q.get("group") || "", $("from").value);
    }
})();
