// Drives a running tritonsim with Joyent's sdc-clients (VMAPI, CNAPI, IMGAPI, FWAPI)
// exactly as Triton's own services would. Usage:
//   node sdc_clients_conformance.js URL IMAGE_UUID AGENT_IMAGE_UUID
// Prints one line per check and ends with "N passed, N failed"; exit 1 on any failure.
'use strict';

var checks = require('./checks');
var check = checks.check;
var call = checks.call;
var sleep = checks.sleep;

var sdc = require('sdc-clients');

var url = process.argv[2];
var imageUuid = process.argv[3];
var agentImageUuid = process.argv[4];
var OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';
var NET = 'aaaaaaaa-0000-4000-8000-000000000001';





async function waitJob(vmapi, uuid) {
    for (var i = 0; i < 200; i++) {
        var r = await call(vmapi, 'getJob', uuid);
        if (r.err) {
            return r;
        }
        if (['succeeded', 'failed', 'canceled'].indexOf(r.obj.execution) !== -1) {
            return r;
        }
        await sleep(20);
    }
    return {err: new Error('job ' + uuid + ' did not finish')};
}

async function main() {
    var opts = {url: url, agent: false};
    var vmapi = new sdc.VMAPI(opts);
    var cnapi = new sdc.CNAPI(opts);
    var imgapi = new sdc.IMGAPI(opts);

    var r = await call(vmapi, 'ping');
    check('VMAPI ping', !r.err, r.err && r.err.message);

    // Create, with a client-chosen uuid.
    var vmUuid = 'c0ffee00-0000-4000-8000-000000000001';
    r = await call(vmapi, 'createVm', {
        uuid: vmUuid, owner_uuid: OWNER, brand: 'lx', ram: 256,
        networks: [NET], image_uuid: imageUuid, alias: 'conf-1',
        tags: {'mariposa.service': 'conformance'}
    });
    check('createVm returns vm_uuid and job_uuid',
        !r.err && r.obj.vm_uuid === vmUuid && !!r.obj.job_uuid,
        r.err ? r.err.message : JSON.stringify(r.obj));
    var job = await waitJob(vmapi, r.obj && r.obj.job_uuid);
    check('provision job succeeds', !job.err && job.obj.execution === 'succeeded',
        job.err ? job.err.message : job.obj.execution);

    r = await call(vmapi, 'getVm', {uuid: vmUuid});
    check('getVm is running', !r.err && r.obj.state === 'running',
        r.err ? r.err.message : r.obj.state);
    check('getVm has tags and nics', !r.err && r.obj.tags['mariposa.service'] === 'conformance' &&
        r.obj.nics.length === 1);

    r = await call(vmapi, 'listVms', {'tag.mariposa.service': 'conformance', state: 'active'});
    check('listVms by tag finds the VM', !r.err && r.obj.length === 1 && r.obj[0].uuid === vmUuid,
        r.err ? r.err.message : JSON.stringify(r.obj.map(function (v) { return v.uuid; })));

    r = await call(vmapi, 'countVms', {'tag.mariposa.service': 'conformance'});
    check('countVms reads x-joyent-resource-count', !r.err && r.obj === 1,
        r.err ? r.err.message : String(r.obj));

    r = await call(vmapi, 'listVms', {bogus: 'x'});
    check('listVms rejects an unknown parameter (409 ValidationFailed)',
        r.err && r.err.statusCode === 409 && r.err.body.code === 'ValidationFailed',
        r.err ? r.err.statusCode : 'no error');

    r = await call(vmapi, 'listMetadata', 'tags', {uuid: vmUuid});
    check('listMetadata tags', !r.err && r.obj['mariposa.service'] === 'conformance',
        r.err ? r.err.message : JSON.stringify(r.obj));

    r = await call(vmapi, 'stopVm', {uuid: vmUuid});
    check('stopVm starts a job', !r.err && !!r.obj.job_uuid, r.err && r.err.message);
    job = await waitJob(vmapi, r.obj && r.obj.job_uuid);
    r = await call(vmapi, 'getVm', {uuid: vmUuid});
    check('VM is stopped', !r.err && r.obj.state === 'stopped', r.err ? r.err.message : r.obj.state);

    r = await call(vmapi, 'listJobs', {vm_uuid: vmUuid});
    check('listJobs by vm_uuid', !r.err && r.obj.length === 2, r.err ? r.err.message : r.obj.length);

    r = await call(vmapi, 'deleteVm', {uuid: vmUuid});
    check('deleteVm starts a job', !r.err && !!r.obj.job_uuid, r.err && r.err.message);
    job = await waitJob(vmapi, r.obj && r.obj.job_uuid);
    r = await call(vmapi, 'getVm', {uuid: vmUuid});
    check('VM is destroyed', !r.err && r.obj.state === 'destroyed', r.err ? r.err.message : r.obj.state);

    r = await call(vmapi, 'getVm', {uuid: '00000000-0000-4000-8000-00000000dead'});
    check('getVm of a missing VM is 404 ResourceNotFound',
        r.err && r.err.statusCode === 404 && r.err.body.code === 'ResourceNotFound',
        r.err ? r.err.statusCode : 'no error');

    // CNAPI
    r = await call(cnapi, 'listServers', {extras: 'agents'});
    check('listServers with agents', !r.err && r.obj.length === 3 && Array.isArray(r.obj[0].agents),
        r.err ? r.err.message : r.obj.length);
    var serverUuid = r.obj && r.obj[1].uuid;
    r = await call(cnapi, 'getServer', serverUuid);
    check('getServer', !r.err && r.obj.uuid === serverUuid && r.obj.status === 'running',
        r.err && r.err.message);
    r = await call(cnapi, 'installAgent', serverUuid, {image_uuid: agentImageUuid});
    check('installAgent returns a task id', !r.err && !!r.obj.id, r.err && r.err.message);
    var taskId = r.obj && r.obj.id;
    r = await call(cnapi, 'waitTask', taskId, {timeout: 10000});
    check('waitTask completes', !r.err && r.obj.status === 'complete',
        r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(cnapi, 'getServer', serverUuid);
    var agent = !r.err && r.obj.agents.filter(function (a) { return a.name === 'cn-agent'; })[0];
    check('the server lists the new agent version', agent && agent.version === '2.14.1',
        JSON.stringify(agent));

    // IMGAPI
    r = await call(imgapi, 'listImages', {});
    check('listImages', !r.err && r.obj.length >= 2, r.err ? r.err.message : r.obj.length);
    r = await call(imgapi, 'getImage', imageUuid);
    check('getImage', !r.err && r.obj.uuid === imageUuid && r.obj.name === 'nginx',
        r.err && r.err.message);
    r = await call(imgapi, 'getImage', '00000000-0000-4000-8000-00000000dead');
    check('getImage of a missing image is 404 ResourceNotFound',
        r.err && r.err.statusCode === 404 && r.err.body.code === 'ResourceNotFound',
        r.err ? r.err.statusCode : 'no error');

    // FWAPI
    var fwapi = new sdc.FWAPI(opts);
    var ruleUuid = 'f12e0000-0000-4000-8000-000000000001';
    var ruleText = 'FROM (tag "mariposa.service" = "web") TO (tag "mariposa.service" = "db") ALLOW tcp PORT 5432';
    r = await call(fwapi, 'ping', {});
    check('FWAPI ping', !r.err, r.err && r.err.message);
    r = await call(fwapi, 'createRule', {uuid: ruleUuid, owner_uuid: OWNER, enabled: true, rule: ruleText,
        description: 'conformance'});
    check('createRule with a chosen uuid', !r.err && r.obj.uuid === ruleUuid && r.obj.enabled === true &&
        r.obj.owner_uuid === OWNER && !!r.obj.version, r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(fwapi, 'createRule', {uuid: ruleUuid, owner_uuid: OWNER, enabled: true, rule: ruleText});
    check('createRule again with that uuid is 422 RuleExistsError',
        r.err && r.err.statusCode === 422 && r.err.body.code === 'RuleExistsError',
        r.err ? JSON.stringify(r.err.body) : 'no error');
    r = await call(fwapi, 'createRule', {owner_uuid: OWNER, rule: 'FROM any TO any ALLOW tcp'});
    check('createRule of a bad rule is 422 InvalidParameters naming the rule',
        r.err && r.err.statusCode === 422 && r.err.body.code === 'InvalidParameters' &&
        r.err.body.errors[0].field === 'rule', r.err ? JSON.stringify(r.err.body) : 'no error');
    r = await call(fwapi, 'listRules', {owner_uuid: OWNER});
    check('listRules by owner', !r.err && r.obj.length === 1 && r.obj[0].rule === ruleText,
        r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(fwapi, 'updateRule', ruleUuid, {enabled: false, owner_uuid: OWNER});
    check('updateRule keeps the rule, changes enabled', !r.err && r.obj.enabled === false &&
        r.obj.rule === ruleText && r.obj.uuid === ruleUuid, r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(fwapi, 'getRule', ruleUuid, {owner_uuid: '11111111-1111-4111-8111-111111111111'});
    check('getRule as another owner is 403', r.err && r.err.statusCode === 403,
        r.err ? r.err.statusCode : 'no error');
    r = await call(fwapi, 'deleteRule', ruleUuid, {owner_uuid: OWNER});
    check('deleteRule', !r.err, r.err && r.err.message);
    r = await call(fwapi, 'getRule', ruleUuid, {});
    check('getRule of a deleted rule is 404 ResourceNotFound',
        r.err && r.err.statusCode === 404 && r.err.body.code === 'ResourceNotFound',
        r.err ? r.err.statusCode : 'no error');

    // NAPI fabrics
    var napi = new sdc.NAPI(opts);
    r = await call(napi, 'createFabricVLAN', OWNER, {vlan_id: 44, name: 'conformance', description: 'c'});
    check('createFabricVLAN', !r.err && r.obj.vlan_id === 44 && r.obj.name === 'conformance',
        r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(napi, 'listFabricVLANs', OWNER, {});
    check('listFabricVLANs', !r.err && r.obj.some(function (v) { return v.vlan_id === 44; }),
        r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(napi, 'createFabricNetwork', OWNER, 44, {name: 'conformance-private', subnet: '10.9.1.0/24',
        provision_start_ip: '10.9.1.2', provision_end_ip: '10.9.1.250', gateway: '10.9.1.1',
        resolvers: ['8.8.8.8']});
    var fabricNet = r.obj && r.obj.uuid;
    check('createFabricNetwork', !r.err && !!fabricNet && r.obj.vlan_id === 44 && r.obj.fabric === true,
        r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(napi, 'createFabricNetwork', OWNER, 44, {name: 'conformance-overlap', subnet: '10.9.0.0/16',
        provision_start_ip: '10.9.0.2', provision_end_ip: '10.9.0.250'});
    check('createFabricNetwork of an overlapping subnet is refused', r.err && r.err.statusCode >= 400,
        r.err ? JSON.stringify(r.err.body) : 'no error');
    r = await call(napi, 'listFabricNetworks', OWNER, 44, {});
    check('listFabricNetworks', !r.err && r.obj.length === 1 && r.obj[0].uuid === fabricNet,
        r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(napi, 'deleteFabricVLAN', OWNER, 44, {});
    check('deleteFabricVLAN with a network on it is refused', r.err && r.err.statusCode >= 400,
        r.err ? r.err.statusCode : 'no error');

    // VOLAPI
    var volapi = new sdc.VOLAPI({url: url, agent: false, userAgent: 'mariposa-conformance'});
    r = await call(volapi, 'ping');
    check('VOLAPI ping', !r.err, r.err && r.err.message);
    r = await call(volapi, 'createVolume', {name: 'conformance.data', owner_uuid: OWNER, type: 'tritonnfs',
        size: 20480, networks: [fabricNet]});
    var volUuid = r.obj && r.obj.uuid;
    check('createVolume', !r.err && !!volUuid && r.obj.state === 'creating' && r.obj.size === 20480,
        r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(volapi, 'createVolume', {name: 'conformance.data', owner_uuid: OWNER, type: 'tritonnfs',
        networks: [fabricNet]});
    check('createVolume of a name in use is 409 VolumeAlreadyExists',
        r.err && r.err.statusCode === 409 && r.err.body.code === 'VolumeAlreadyExists',
        r.err ? JSON.stringify(r.err.body) : 'no error');
    var ready = false;
    for (var k = 0; k < 200 && !ready; k++) {
        r = await call(volapi, 'getVolume', {uuid: volUuid, owner_uuid: OWNER});
        ready = !r.err && r.obj.state === 'ready';
        if (!ready) await sleep(20);
    }
    check('getVolume: ready after its job', ready, r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(volapi, 'listVolumes', {owner_uuid: OWNER});
    check('listVolumes by owner', !r.err && r.obj.length === 1 && r.obj[0].name === 'conformance.data',
        r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(volapi, 'listVolumeSizes', {});
    check('listVolumeSizes', !r.err && r.obj.length > 0 && r.obj[0].size === 10240,
        r.err ? r.err.message : JSON.stringify(r.obj));
    r = await call(volapi, 'deleteVolume', {uuid: volUuid, owner_uuid: OWNER});
    check('deleteVolume', !r.err, r.err && r.err.message);
    r = await call(napi, 'deleteFabricNetwork', OWNER, 44, fabricNet, {});
    check('deleteFabricNetwork', !r.err, r.err && r.err.message);

    vmapi.close();
    cnapi.close();
    imgapi.close();
    fwapi.close();
    napi.close();
    volapi.close();
    checks.finish();
}

main().catch(function (e) {
    checks.finish(e);
});
