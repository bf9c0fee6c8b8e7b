// Drives tritonsim's VMAPI change feed with Joyent's changefeed package
// (node-sdc-changefeed), unchanged: its Listener, v1 and v2 registrations,
// and its changefeedsnoop tool. Usage:
//   node changefeed_conformance.js URL IMAGE_UUID
// Prints one line per check and ends with "N passed, N failed"; exit 1 on any failure.
'use strict';

var checks = require('./checks');
var check = checks.check;
var call = checks.call;
var jcall = checks.jcall;
var sleep = checks.sleep;

var bunyan = require('bunyan');
var changefeed = require('changefeed');
var childProcess = require('child_process');
var path = require('path');
var restify = require('restify-clients');
var sdc = require('sdc-clients');

var url = process.argv[2];
var imageUuid = process.argv[3];
var OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';
var NET = 'aaaaaaaa-0000-4000-8000-000000000001';
var VM_SUBRESOURCES = ['alias', 'customer_metadata', 'destroyed', 'internal_metadata', 'nics', 'owner_uuid',
    'server_uuid', 'state', 'tags'];

var log = bunyan.createLogger({name: 'conformance', level: 'fatal'});





// A Listener with its items and events recorded.
function listen(name, opts) {
    var o = {
        log: log,
        url: url,
        instance: name + '-' + process.pid,
        service: 'conformance',
        backoff: {minTimeout: 100, maxTimeout: 1000, retries: Infinity}
    };
    Object.keys(opts).forEach(function (k) { o[k] = opts[k]; });
    var l = changefeed.createListener(o);
    var rec = {listener: l, items: [], bootstraps: [], ends: 0, errors: []};
    l.on('bootstrap', function (b) { rec.bootstraps.push(b); });
    l.on('readable', function () {
        var item;
        while ((item = l.read()) !== null) {
            rec.items.push(item);
        }
    });
    l.on('connection-end', function () { rec.ends++; });
    l.on('error', function (e) { rec.errors.push(e.message); });
    l.register();
    return rec;
}

async function until(what, ms) {
    for (var waited = 0; waited < ms; waited += 20) {
        if (what()) {
            return true;
        }
        await sleep(20);
    }
    return what();
}

function itemsFor(rec, uuid) {
    return rec.items.filter(function (i) { return i.changedResourceId === uuid; });
}

async function main() {
    var json = restify.createJsonClient({url: url, log: log, agent: false});
    var vmapi = new sdc.VMAPI({url: url, agent: false});

    var r = await jcall(json, 'get', '/changefeeds');
    var vm = r.obj && r.obj.vm;
    check('GET /changefeeds lists the vm resource with its bootstrap route', !r.err && vm &&
        vm.resource === 'vm' && vm.bootstrapRoute === '/vms' &&
        JSON.stringify(vm.subResources) === JSON.stringify(VM_SUBRESOURCES), JSON.stringify(r.obj || r.err));

    // v1: one changeKind; every subResource.
    var all = listen('all', {changeKind: {resource: 'vm', subResources: VM_SUBRESOURCES}});
    // v1, state only: items for other keys are not sent to it.
    var stateOnly = listen('state', {changeKind: {resource: 'vm', subResources: ['state']}});
    // v2: a resources list.
    var v2 = listen('v2', {resources: [{resource: 'vm', subResources: ['tags']}]});
    await until(function () {
        return all.bootstraps.length && stateOnly.bootstraps.length && v2.bootstraps.length;
    }, 5000);
    check('v1 listener gets the bootstrap (the resource, bootstrapRoute /vms)',
        all.bootstraps.length === 1 && all.bootstraps[0].bootstrapRoute === '/vms' &&
        all.bootstraps[0].resource === 'vm', JSON.stringify(all.bootstraps) + ' ' + all.errors);
    check('v2 listener gets one bootstrap per route', v2.bootstraps.length === 1 &&
        v2.bootstraps[0].bootstrapRoute === '/vms', JSON.stringify(v2.bootstraps) + ' ' + v2.errors);

    r = await jcall(json, 'get', '/changefeeds/stats');
    var regs = r.obj && r.obj.registrations && r.obj.registrations.vm;
    check('GET /changefeeds/stats shows the three registrations', !r.err && r.obj.listeners === 3 && regs &&
        regs['all-' + process.pid] && regs['v2-' + process.pid] &&
        JSON.stringify(regs['state-' + process.pid].subResources) === '["state"]', JSON.stringify(r.obj));

    // A VM created: items from provisioning to running.
    var uuid = '3c4f29b4-1a2b-4c3d-8e9f-000000000001';
    r = await call(vmapi, 'createVm', {uuid: uuid, owner_uuid: OWNER, image_uuid: imageUuid, brand: 'joyent',
        ram: 256, networks: [NET], alias: 'feed-1', tags: {role: 'web'}});
    check('VMAPI creates a VM', !r.err, r.err && r.err.message);
    var running = await until(function () {
        return itemsFor(all, uuid).some(function (i) { return i.resourceObject.state === 'running'; });
    }, 5000);
    var first = itemsFor(all, uuid)[0];
    check('the create is published: changeKind vm, changedResourceId, resourceObject, published',
        first && first.changeKind.resource === 'vm' && first.resourceObject.uuid === uuid &&
        first.changeKind.subResources.indexOf('state') !== -1 && /^[0-9]+$/.test(first.published),
        JSON.stringify(first));
    check('the VM reaching running is published with subResources [state …]', running &&
        itemsFor(all, uuid).some(function (i) {
            return i.resourceObject.state === 'running' && i.changeKind.subResources.indexOf('state') !== -1 &&
                i.changeKind.subResources.indexOf('tags') === -1;
        }), JSON.stringify(itemsFor(all, uuid).map(function (i) { return i.changeKind.subResources; })));
    check('the state-only listener sees the same state changes',
        await until(function () {
            return itemsFor(stateOnly, uuid).some(function (i) { return i.resourceObject.state === 'running'; });
        }, 2000));

    // A tag change: subResources [tags, last_modified]; not sent to state-only.
    var beforeState = itemsFor(stateOnly, uuid).length;
    r = await call(vmapi, 'addMetadata', 'tags', {uuid: uuid, owner_uuid: OWNER, metadata: {tier: 'front'}});
    check('VMAPI adds a tag', !r.err, r.err && r.err.message);
    var tagged = await until(function () {
        return itemsFor(v2, uuid).some(function (i) { return i.resourceObject.tags.tier === 'front'; });
    }, 5000);
    var tagItem = itemsFor(all, uuid).filter(function (i) { return i.resourceObject.tags.tier === 'front'; })[0];
    check('the tag change is published to listeners of tags (v1 all, v2 tags)', tagged && tagItem &&
        tagItem.changeKind.subResources.indexOf('tags') !== -1 &&
        tagItem.changeKind.subResources.indexOf('state') === -1, JSON.stringify(tagItem));
    await sleep(200);
    check('a listener of state only does not get the tag change', itemsFor(stateOnly, uuid).length === beforeState,
        JSON.stringify(itemsFor(stateOnly, uuid).slice(beforeState)));

    // The Listener's own heartbeat text (its 27.8 s timer) changes nothing.
    all.listener.wsc.send('heartbeat');
    all.listener.wsc.send('heartbeat');
    await sleep(100);
    check('heartbeats from the listener keep the registration', all.ends === 0 && all.errors.length === 0,
        all.ends + ' ' + all.errors);

    // changefeedsnoop, as an operator would run it.
    var port = url.replace(/^.*:/, '').replace(/\/.*$/, '');
    var snoopPath = path.join(path.dirname(require.resolve('changefeed/package.json')), 'bin', 'changefeedsnoop');
    var snoop = childProcess.spawn(process.execPath, [snoopPath, '-h', '127.0.0.1', '-p', port, '-r', 'vm', '-s',
        'state'], {env: Object.assign({}, process.env, {LOG_LEVEL: 'info'})});
    var snooped = '';
    snoop.stdout.on('data', function (d) { snooped += d; });
    snoop.stderr.on('data', function (d) { snooped += d; });
    var snoopReady = await until(function () { return snooped.indexOf('bootstrap received') !== -1; }, 5000);
    check('changefeedsnoop registers and gets the bootstrap', snoopReady, snooped.slice(0, 500));

    r = await call(vmapi, 'deleteVm', {uuid: uuid, owner_uuid: OWNER});
    check('VMAPI deletes the VM', !r.err, r.err && r.err.message);
    var destroyed = await until(function () {
        return itemsFor(all, uuid).some(function (i) { return i.resourceObject.state === 'destroyed'; });
    }, 5000);
    check('the destroy is published', destroyed);
    var snoopSaw = await until(function () {
        return snooped.indexOf('"changedResourceId":"' + uuid + '"') !== -1 && snooped.indexOf('destroyed') !== -1;
    }, 5000);
    check('changefeedsnoop prints the change item', snoopSaw, snooped.slice(-800));
    snoop.kill('SIGTERM');

    // A registration for a resource VMAPI does not publish is refused.
    var bad = listen('bad', {changeKind: {resource: 'image', subResources: ['state']}});
    await until(function () { return bad.ends > 0; }, 5000);
    check('a registration for an unknown resource is ended, with no bootstrap',
        bad.ends > 0 && bad.bootstraps.length === 0, bad.ends + ' ' + JSON.stringify(bad.bootstraps));
    bad.listener.close();

    // The publisher drops every listener: they see connection-end, register
    // again (their backoff) and get a new bootstrap.
    r = await jcall(json, 'post', '/_sim/changefeed/drop', {});
    check('the control API drops the listeners', !r.err, r.err && r.err.message);
    var again = await until(function () { return all.ends > 0 && all.bootstraps.length >= 2; }, 8000);
    check('a dropped listener reconnects and bootstraps again', again,
        all.ends + ' ends, ' + all.bootstraps.length + ' bootstraps');

    // Without a feed (an older VMAPI) GET /changefeeds is 404.
    r = await jcall(json, 'post', '/_sim/changefeed/off', {});
    var missing = await jcall(json, 'get', '/changefeeds');
    check('with the feed off GET /changefeeds answers 404', missing.err && missing.res &&
        missing.res.statusCode === 404, missing.err && missing.err.message);
    await jcall(json, 'post', '/_sim/changefeed/on', {});

    [all, stateOnly, v2].forEach(function (rec) { rec.listener.close(); });
    json.close();
    vmapi.close();
    checks.finish();
}

main().catch(function (e) {
    checks.finish(e);
});
