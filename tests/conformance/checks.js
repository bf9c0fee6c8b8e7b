// What both conformance scripts share: TAP-like checks with a count, and
// promises around callback APIs.
'use strict';

var counts = {passed: 0, failed: 0};

function check(name, ok, detail) {
    if (ok) {
        counts.passed++;
        console.log('ok - ' + name);
    } else {
        counts.failed++;
        console.log('not ok - ' + name + (detail ? ': ' + detail : ''));
    }
}

// `client[method](args…, cb)` as a promise of {err, obj, req, res}; `order`
// names the callback's arguments (sdc-clients: err, obj, req, res;
// restify-clients' JsonClient: err, req, res, obj).
function callWith(order, client, method, args) {
    return new Promise(function (resolve) {
        args.push(function () {
            var out = {};
            for (var i = 0; i < order.length; i++) {
                out[order[i]] = arguments[i];
            }
            resolve(out);
        });
        client[method].apply(client, args);
    });
}

function call(client, method) {
    return callWith(['err', 'obj', 'req', 'res'], client, method, Array.prototype.slice.call(arguments, 2));
}

function jcall(client, method) {
    return callWith(['err', 'req', 'res', 'obj'], client, method, Array.prototype.slice.call(arguments, 2));
}

function sleep(ms) {
    return new Promise(function (r) { setTimeout(r, ms); });
}

// Prints the count and exits (1 on any failure); `crash`: an exception.
function finish(crash) {
    if (crash) {
        console.log('not ok - ' + crash.stack);
        counts.failed++;
    }
    console.log(counts.passed + ' passed, ' + counts.failed + ' failed');
    process.exit(counts.failed === 0 ? 0 : 1);
}

module.exports = {check: check, call: call, jcall: jcall, sleep: sleep, finish: finish};
