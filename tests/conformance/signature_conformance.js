// Joyent's own signers, unchanged — npm http-signature (what CloudAPI's
// clients and restify-clients use) and smartdc-auth (what the triton CLI
// and node-smartdc use, with keys from files or ssh-agent) — sign calls to
// mariposad's HTTP API as Triton accounts and sub-users, whose keys and roles
// tritonsim's mahi serves. Every refusal CloudAPI's rules imply is tried:
// an unknown key, another account's key, a skewed date, a replay, an
// altered request, a sub-user without the role.
//
// node signature_conformance.js HTTP_URL KEYDIR
// node signature_conformance.js HTTP_URL KEYDIR once KEY KEYID METHOD PATH
//   one request signed with KEYDIR/KEY as KEYID (date and request-target);
//   prints "STATUS BODY".
//   KEYDIR holds jill_ed, jill_rsa (account jill), bob_ec (jill's sub-user
//   bob, Triton role mariposa-deployer), carol_ed (jill's sub-user carol, no
//   Mariposa role) and eve (account eve), each with its .pub.
'use strict';

var fs = require('fs');
var http = require('http');
var httpSignature = require('http-signature');
var sshpk = require('sshpk');
var auth = require('smartdc-auth');
var checks = require('./checks');
var check = checks.check;

var base = new URL(process.argv[2]);
var keydir = process.argv[3];

function key(name) {
    return fs.readFileSync(keydir + '/' + name, 'utf8');
}

function md5(name) {
    return sshpk.parseKey(key(name + '.pub'), 'ssh').fingerprint('md5').toString('hex');
}

// One HTTP request; `sign(req)` sets its Authorization (and Date). Resolves
// {status, body, headers, sent: the request's headers}.
function send(method, path, body, sign, tamper) {
    return new Promise(function (resolve) {
        var data = body === undefined ? undefined : JSON.stringify(body);
        var req = http.request({
            host: base.hostname, port: base.port, method: method, path: path,
            headers: data ? {'content-type': 'application/json', 'content-length': Buffer.byteLength(data)} : {}
        }, function (res) {
            var chunks = [];
            res.on('data', function (c) { chunks.push(c); });
            res.on('end', function () {
                var text = Buffer.concat(chunks).toString();
                var parsed;
                try { parsed = JSON.parse(text); } catch (e) { parsed = text; }
                resolve({status: res.statusCode, body: parsed, text: text, sent: req.getHeaders()});
            });
        });
        req.on('error', function (err) { resolve({status: 0, body: String(err), text: String(err), sent: {}}); });
        Promise.resolve(sign ? sign(req) : null).then(function () {
            if (tamper) tamper(req);
            req.end(data);
        });
    });
}

// http-signature's signRequest with a private key (CloudAPI's own scheme).
function signWith(keyName, keyId, extra) {
    return function (req) {
        var opts = {key: key(keyName), keyId: keyId};
        for (var k in extra || {}) opts[k] = extra[k];
        httpSignature.signRequest(req, opts);
    };
}

// smartdc-auth: a private-key signer wrapped in requestSigner, as the
// triton CLI and node-smartdc build their Authorization headers.
function smartdcSigner(keyName, user, subuser) {
    var signer = auth.privateKeySigner({key: key(keyName), keyId: md5(keyName), user: user});
    return function (req) {
        return new Promise(function (resolve, reject) {
            var rs = auth.requestSigner({sign: signer, user: user, subuser: subuser});
            var date = rs.writeDateHeader();
            req.setHeader('date', date);
            rs.writeTarget(req.method, req.path);
            rs.sign(function (err, authz) {
                if (err) return reject(err);
                req.setHeader('authorization', authz);
                resolve();
            });
        });
    };
}

function manifest(project, count) {
    return 'project: ' + project + '\nservices:\n  web:\n    image: autopilotpattern/nginx@1.4.0\n    package: g4-highcpu-1G\n    count: ' +
        count + '\n';
}

function apply(project, count, sign) {
    return send('POST', '/v1/projects/' + project + ':apply', {manifest: manifest(project, count), force: true}, sign);
}

function why(r) {
    return r.status + ' ' + (typeof r.body === 'object' ? JSON.stringify(r.body) : r.text).slice(0, 400);
}

async function main() {
    var jillEd = '/jill/keys/' + md5('jill_ed');
    var jillRsa = '/jill/keys/' + md5('jill_rsa');
    var bobId = '/jill/users/bob/keys/' + md5('bob_ec');

    // The account itself, with each signer and key type.
    var r = await apply('jill-web', 1, signWith('jill_ed', jillEd));
    check('http-signature, ed25519: account jill applies a new project (its own)', r.status === 200, why(r));
    r = await send('GET', '/v1/projects/jill-web', undefined, signWith('jill_rsa', jillRsa));
    check('http-signature, rsa-sha256: account jill reads it', r.status === 200 &&
          JSON.stringify(r.body).indexOf('930896af-bf8c-48d4-885c-6573a94b1853') >= 0, why(r));
    r = await send('GET', '/v1/projects/jill-web', undefined,
                   signWith('jill_rsa', jillRsa, {headers: ['date', '(request-target)', 'host']}));
    check('http-signature signing date, (request-target) and host is taken', r.status === 200, why(r));
    r = await send('GET', '/v1/projects', undefined, smartdcSigner('jill_rsa', 'jill'));
    check('smartdc-auth requestSigner (date and request-target): account jill lists its projects',
          r.status === 200 && r.text.indexOf('jill-web') >= 0, why(r));
    r = await send('GET', '/v1/auth/whoami', undefined, smartdcSigner('jill_ed', 'jill'));
    check('whoami names the Triton account', r.status === 200 && r.text.indexOf('triton:jill') >= 0, why(r));

    // A sub-user with the Triton role mariposa-deployer, ECDSA key.
    r = await apply('jill-web', 2, smartdcSigner('bob_ec', 'jill', 'bob'));
    check('smartdc-auth, ecdsa: sub-user bob (role mariposa-deployer) applies to jill\'s project', r.status === 200, why(r));
    r = await send('POST', '/v1/projects/jill-web:freeze', {}, signWith('bob_ec', bobId));
    check('sub-user bob may not freeze (operator): 403 naming the role', r.status === 403 &&
          r.text.indexOf('mariposa-operator') >= 0, why(r));
    r = await apply('bob-own', 1, signWith('bob_ec', bobId));
    check('sub-user bob may not create a project of his own: 403', r.status === 403, why(r));
    r = await apply('jill-web', 3, smartdcSigner('carol_ed', 'jill', 'carol'));
    check('sub-user carol (no Mariposa role) may not apply: 403', r.status === 403, why(r));
    r = await send('GET', '/v1/projects', undefined, smartdcSigner('carol_ed', 'jill', 'carol'));
    check('sub-user carol lists no project', r.status === 200 && r.text.indexOf('jill-web') < 0, why(r));

    // Another account sees nothing of jill's, and cannot take its names.
    r = await send('GET', '/v1/projects/jill-web', undefined, smartdcSigner('eve', 'eve'));
    check('account eve may not read jill\'s project: 403', r.status === 403, why(r));
    r = await send('GET', '/v1/projects/no-such-project', undefined, smartdcSigner('eve', 'eve'));
    check('account eve gets the same 403 for a project that does not exist (no oracle of names)', r.status === 403,
          why(r));
    r = await apply('jill-web', 5, smartdcSigner('eve', 'eve'));
    check('account eve may not apply to jill\'s project: 403', r.status === 403, why(r));

    // Refusals: every one 401, naming why.
    r = await send('GET', '/v1/projects', undefined, signWith('eve', '/jill/keys/' + md5('eve')));
    check('another account\'s key under jill\'s keyId: 401 (jill has no such key)', r.status === 401 &&
          r.text.indexOf('has no key') >= 0, why(r));
    r = await send('GET', '/v1/projects', undefined, signWith('eve', jillEd));
    check('a signature by another key than the keyId names: 401 (does not match)', r.status === 401 &&
          r.text.indexOf('does not match') >= 0, why(r));
    r = await send('GET', '/v1/projects', undefined, signWith('jill_ed', '/nobody/keys/' + md5('jill_ed')));
    check('an unknown account: 401', r.status === 401 && r.text.indexOf('no account nobody') >= 0, why(r));
    r = await send('GET', '/v1/projects', undefined, function (req) {
        req.setHeader('date', new Date(Date.now() - 10 * 60 * 1000).toUTCString());
        httpSignature.signRequest(req, {key: key('jill_ed'), keyId: jillEd});
    });
    check('a date 10 minutes old: 401 (clock skew)', r.status === 401 && r.text.indexOf('behind') >= 0, why(r));
    r = await send('GET', '/v1/projects', undefined, function (req) {
        req.setHeader('date', new Date(Date.now() + 10 * 60 * 1000).toUTCString());
        httpSignature.signRequest(req, {key: key('jill_ed'), keyId: jillEd});
    });
    check('a date 10 minutes ahead: 401', r.status === 401 && r.text.indexOf('ahead') >= 0, why(r));
    var captured = {};
    r = await send('POST', '/v1/projects/jill-web:freeze', {}, function (req) {
        httpSignature.signRequest(req, {key: key('jill_ed'), keyId: jillEd, headers: ['date', '(request-target)']});
        captured.date = req.getHeader('date');
        captured.authorization = req.getHeader('authorization');
    });
    check('a signed write (freeze) is taken once', r.status === 200, why(r));
    r = await send('POST', '/v1/projects/jill-web:freeze', {}, function (req) {
        req.setHeader('date', captured.date);
        req.setHeader('authorization', captured.authorization);
    });
    check('the same write sent again (a replay): 401', r.status === 401 && r.text.indexOf('replay') >= 0, why(r));
    r = await send('POST', '/v1/projects/jill-web:thaw', {}, signWith('jill_ed', jillEd));
    check('a fresh signature is taken (thaw)', r.status === 200, why(r));
    var read = signWith('jill_ed', jillEd);
    var same = {};
    r = await send('GET', '/v1/projects/jill-web', undefined, function (req) {
        read(req);
        same.date = req.getHeader('date');
        same.authorization = req.getHeader('authorization');
    });
    var r2 = await send('GET', '/v1/projects/jill-web', undefined, function (req) {
        req.setHeader('date', same.date);
        req.setHeader('authorization', same.authorization);
    });
    check('a read may repeat with its signature (polling twice in one second)', r.status === 200 && r2.status === 200,
          why(r) + ' / ' + why(r2));
    r = await send('DELETE', '/v1/projects/jill-web', undefined, function (req) {
        httpSignature.signRequest(req, {key: key('jill_ed'), keyId: jillEd, headers: ['date', '(request-target)']});
    }, function (req) {
        // Altered on its way: the signed GET becomes a DELETE of another path.
        req.path = '/v1/projects/jill-web?force=true';
    });
    check('an altered request (target changed after signing): 401', r.status === 401 &&
          r.text.indexOf('does not match') >= 0, why(r));
    r = await send('GET', '/v1/projects', undefined, function (req) {
        req.setHeader('date', new Date().toUTCString());
        req.setHeader('authorization', 'Signature keyId="' + jillEd + '",algorithm="rsa-sha1",signature="AAAA"');
    });
    check('an algorithm not taken (rsa-sha1): 401 naming those taken', r.status === 401 &&
          r.text.indexOf('rsa-sha256') >= 0, why(r));
    r = await send('GET', '/v1/projects', undefined, function (req) {
        req.setHeader('authorization', 'Signature keyId="' + jillEd + '",algorithm="ed25519-sha512",' +
                      'headers="(request-target)",signature="AAAA"');
    });
    check('a signature without a date: 401', r.status === 401 && r.text.indexOf('date') >= 0, why(r));
    r = await send('GET', '/v1/projects/jill-web', undefined, signWith('jill_ed', jillEd));
    check('jill is still served after the refusals', r.status === 200, why(r));

    checks.finish();
}

if (process.argv[4] === 'once') {
    var a = process.argv.slice(5);
    send(a[2], a[3], a[2] === 'GET' ? undefined : {}, signWith(a[0], a[1], {headers: ['date', '(request-target)']}))
        .then(function (r) { console.log(r.status + ' ' + r.text); });
} else {
    main().catch(checks.finish);
}
